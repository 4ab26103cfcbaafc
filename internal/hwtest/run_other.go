//go:build !linux

package hwtest

import (
	"context"
	"runtime"
	"time"
)

// Run reports that the checks need Linux.
func Run(ctx context.Context, cfg Config) *Report {
	rep := &Report{}
	rep.Set("date", time.Now().UTC().Format(time.RFC3339))
	rep.Set("host arch", runtime.GOOS+"/"+runtime.GOARCH)
	rep.Set("Go", runtime.Version())
	rep.Set("device", cfg.Device)
	rep.Add(Result{Name: "open device", Status: Fail, Detail: ErrUnsupported.Error()})
	return rep
}
