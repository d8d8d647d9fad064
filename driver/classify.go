package driver

import (
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgceiling/pgceiling/result"
)

// Classify maps a transaction's error to its outcome class: by SQLSTATE for server
// errors, network and connection-setup errors as connection, anything else as other. It
// never returns PoolTimeout: that class is decided by the driver, not by an error.
func Classify(err error) result.Class {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch code := pgErr.Code; code {
		case pgerrcode.QueryCanceled:
			return result.StatementTimeout
		case pgerrcode.LockNotAvailable:
			return result.LockTimeout
		case pgerrcode.DeadlockDetected:
			return result.Deadlock
		case pgerrcode.SerializationFailure:
			return result.Serialization
		case pgerrcode.IdleInTransactionSessionTimeout:
			return result.IdleInTxTimeout
		case pgerrcode.TooManyConnections:
			return result.TooManyConnections
		case pgerrcode.AdminShutdown, pgerrcode.CrashShutdown, pgerrcode.CannotConnectNow:
			return result.Connection
		default:
			if pgerrcode.IsConnectionException(code) { // class 08
				return result.Connection
			}
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
