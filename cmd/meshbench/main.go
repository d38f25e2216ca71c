// Command meshbench measures what an Istio data plane costs on your Kubernetes cluster.
package main

import (
	"context"
	"log/slog"
	"os"

	"k8s.io/klog/v2"

	"github.com/meshbench/meshbench/cmd/meshbench/app"
)

func main() {
	quietKlog()
	os.Exit(app.Main())
}

// quietKlog routes client-go's klog into slog at debug level, so library lines printed on Ctrl-C during an exec or
// port-forward ("use of closed network connection") do not reach the user; they show only where slog.Default()
// enables debug.
func quietKlog() {
	klog.SetSlogLogger(slog.New(debugHandler{}))
}

// debugHandler hands every record to slog.Default()'s handler at level debug, whatever level klog gave it (klog
// logs client-go's unhandled errors as errors; for a user they are debug detail). ops replays WithAttrs/WithGroup
// on that handler in the order they were asked for.
type debugHandler struct {
	ops []func(slog.Handler) slog.Handler
}

func (debugHandler) Enabled(ctx context.Context, _ slog.Level) bool {
	return slog.Default().Handler().Enabled(ctx, slog.LevelDebug)
}

func (h debugHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.Default().Handler()
	if !out.Enabled(ctx, slog.LevelDebug) {
		return nil
	}
	for _, op := range h.ops {
		out = op(out)
	}
	d := slog.NewRecord(r.Time, slog.LevelDebug, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool { d.AddAttrs(a); return true })
	d.AddAttrs(slog.String("lib", "klog"), slog.String("klog_level", r.Level.String()))
	return out.Handle(ctx, d)
}

func (h debugHandler) with(op func(slog.Handler) slog.Handler) debugHandler {
	return debugHandler{ops: append(append([]func(slog.Handler) slog.Handler(nil), h.ops...), op)}
}

func (h debugHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return h.with(func(o slog.Handler) slog.Handler { return o.WithAttrs(as) })
}

func (h debugHandler) WithGroup(name string) slog.Handler {
	return h.with(func(o slog.Handler) slog.Handler { return o.WithGroup(name) })
}
