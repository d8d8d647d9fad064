//go:build !linux

package driver

import (
	"context"
	"net"
)

// rawDial is the plain dial outside Linux (see rawconn_linux.go).
func rawDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return dial
}
