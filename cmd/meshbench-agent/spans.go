package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/meshbench/meshbench/internal/spansink"
)

const spansHelp = "Zipkin span sink for Envoy's zipkin tracer: [--listen ADDR] (default :9411); POST /api/v2/spans counts spans, GET /meshbench/spans returns the counts as JSON, GET /healthz for the readiness probe"

const (
	// spansShutdown bounds the graceful stop: Envoy's reports are small and quick, so in-flight ones finish well
	// within it and the pod's termination grace period is not spent waiting on idle connections.
	spansShutdown = 5 * time.Second
	// spansReadHeader bounds how long a client may take to send its headers (no slowloris holding connections).
	spansReadHeader = 10 * time.Second
)

// runSpans serves the span sink until ctx is cancelled, then shuts down gracefully; nil on a clean stop.
func runSpans(ctx context.Context, args []string) error { return spansMain(ctx, args, nil) }

// spansMain is runSpans with a ready hook called with the bound address before serving, so a test can listen on
// port 0 and learn the port without a race.
func spansMain(ctx context.Context, args []string, ready func(net.Addr)) error {
	fs := flag.NewFlagSet("spans", flag.ContinueOnError)
	listen := fs.String("listen", ":"+strconv.Itoa(spansink.Port), "address to listen on (Zipkin's port by default, where the Telemetry's zipkin provider points)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if ready != nil {
		ready(ln.Addr())
	}
	return serveSpans(ctx, ln, spansink.New())
}

// serveSpans serves sink's Handler on ln, plus /healthz. The probe lives here rather than in spansink because it
// is a deployment concern: the package's Handler stays exactly the Zipkin API and the counts.
func serveSpans(ctx context.Context, ln net.Listener, sink *spansink.Sink) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.Handle("/", sink.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: spansReadHeader}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc: // Serve only returns early on a listener failure
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), spansShutdown)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		<-errc
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
