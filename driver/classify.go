package driver

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgceiling/pgceiling/result"
)

// Classify maps a transaction's error to its outcome class: by SQLSTATE for server
// errors, network and connection-setup errors as connection, anything else as other. It
// never returns PoolTimeout: that class is decided by the driver, not by an error.
func Classify(err error) result.Class {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch code := pgErr.Code; {
		case code == "57014":
			return result.StatementTimeout
		case code == "55P03":
			return result.LockTimeout
		case code == "40P01":
			return result.Deadlock
		case code == "40001":
			return result.Serialization
		case code == "25P03":
			return result.IdleInTxTimeout
		case code == "53300":
			return result.TooManyConnections
		case strings.HasPrefix(code, "08"), code == "57P01", code == "57P02", code == "57P03":
			return result.Connection
		default:
			return result.Other
		}
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connectErr), errors.As(err, &netErr),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, net.ErrClosed):
		return result.Connection
	}
	return result.Other
}

// retryable reports whether a class may be retried under MaxTries: only serialization
// failures and deadlocks, whose transactions the server rolled back whole.
func retryable(c result.Class) bool { return c == result.Serialization || c == result.Deadlock }
