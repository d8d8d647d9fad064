package driver

import (
	"context"

	"github.com/pgceiling/pgceiling/result"
)

// Observer watches the server during a probe through its own connection, which the
// driver does not measure. The driver calls Start when the measured window opens and
// Stop when it closes, passing the transactions committed in the window so the observer
// can report per-transaction figures. Implemented by package observe.
type Observer interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context, committed int64) (*result.Observation, error)
}
