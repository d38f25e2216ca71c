package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"syscall"
	"time"

	"fortio.org/fortio/periodic"
	"fortio.org/log"

	"github.com/meshbench/meshbench/internal/nettool"
)

const crrHelp = "TCP_CRR: connect, request, response, close per transaction to a TCP echo server (fortio periodic engine); --json prints one result"

// Local ports the CRR client binds explicitly, as netperf's TCP_CRR does (kernel-picked ports run out in TIME_WAIT),
// outside the NodePort range; --local-ports narrows it, disjoint per path (docs/measurement.md, TCP_CRR).
const (
	crrPortMin = 33000
	crrPortMax = 65000 // exclusive
	// crrBindTries bounds the search for a free port before a transaction counts as a failed connect.
	crrBindTries = 64
)

func runCRR(ctx context.Context, args []string) error {
	return crrMain(ctx, args, os.Stdout, os.Stderr)
}

func crrMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseRRFlags("crr", args, stderr)
	if err != nil {
		return err
	}
	if f.portMin == 0 {
		f.portMin, f.portMax = crrPortMin, crrPortMax
	}
	if f.hold {
		<-ctx.Done()
		return nil
	}
	log.SetLogLevelStr(f.logLevel)
	b, err := runTCPCRR(ctx, f)
	if err != nil {
		return err
	}
	if err := printBuiltin(stdout, f.jsonOut, b); err != nil {
		return err
	}
	return ctx.Err()
}

// runTCPCRR is netperf TCP_CRR on fortio's periodic engine: each transaction dials a new connection, writes the
// request, reads the echo, and closes.
func runTCPCRR(ctx context.Context, f rrFlags) (nettool.BuiltinResult, error) {
	raddr, err := net.ResolveTCPAddr("tcp", f.target)
	if err != nil {
		return nettool.BuiltinResult{}, fmt.Errorf("resolve %s: %w", f.target, err)
	}
	stop := periodic.NewAborter()
	release := abortOnDone(ctx, stop)
	defer release()
	opts := f.runnerOptions(nettool.BuiltinTestCRR, stop)
	r := periodic.NewPeriodicRunner(&opts)
	// NewPeriodicRunner moves the options and wipes the caller's Runners: install ours on r.Options() only.
	n := r.Options().NumThreads
	runners := make([]*crrRunner, n)
	span := (f.portMax - f.portMin) / n
	for i := range n {
		runners[i] = newCRRRunner(raddr, f.requestBytes, f.timeout, f.portMin+i*span, f.portMin+(i+1)*span)
		// Start at a random port of the slot: back-to-back runs then reuse the oldest tuples last, not first.
		runners[i].next += rand.IntN(span)
		r.Options().Runners[i] = runners[i]
	}
	res := r.Run()
	kinds := map[string]int64{}
	var sockets int64
	for _, c := range runners {
		sockets += c.sockets
		for k, v := range c.errs {
			kinds[k] += v
		}
	}
	return builtinResult(nettool.BuiltinTestCRR, f, res, kinds, sockets), nil
}

// crrRunner is one connection slot ("thread"); the periodic engine calls Run from one goroutine per slot, so it
// needs no locking.
type crrRunner struct {
	raddr    *net.TCPAddr
	req, buf []byte
	timeout  time.Duration
	// ports [lo, hi) are this slot's local ports, next is the one to try first.
	lo, hi, next int
	sockets      int64
	errs         map[string]int64
}

func newCRRRunner(raddr *net.TCPAddr, size int, timeout time.Duration, lo, hi int) *crrRunner {
	return &crrRunner{raddr: raddr, req: payload(size), buf: make([]byte, size), timeout: timeout, lo: lo, hi: hi,
		next: lo, errs: map[string]int64{}}
}

// Run is one TCP_CRR transaction.
func (c *crrRunner) Run(ctx context.Context, _ periodic.ThreadID) (bool, string) {
	deadline := time.Now().Add(c.timeout)
	conn, err := c.dial(ctx, deadline)
	if err != nil {
		return c.fail("connect", err)
	}
	c.sockets++
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return c.fail("deadline", err)
	}
	if _, err := conn.Write(c.req); err != nil {
		return c.fail("write", err)
	}
	if _, err := io.ReadFull(conn, c.buf); err != nil {
		return c.fail("read", err)
	}
	if !bytes.Equal(c.buf, c.req) {
		return c.fail("echo", errors.New("response differs from request"))
	}
	return true, "OK"
}

// dial connects from the next free local port of this slot.
func (c *crrRunner) dial(ctx context.Context, deadline time.Time) (net.Conn, error) {
	var last error
	for range crrBindTries {
		port := c.next
		c.next++
		if c.next >= c.hi {
			c.next = c.lo
		}
		d := net.Dialer{Deadline: deadline, LocalAddr: &net.TCPAddr{Port: port}, Control: reuseAddr}
		conn, err := d.DialContext(ctx, "tcp", c.raddr.String())
		if err == nil {
			return conn, nil
		}
		last = err
		if !errors.Is(err, syscall.EADDRINUSE) && !errors.Is(err, syscall.EADDRNOTAVAIL) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("no free local port in %d tries: %w", crrBindTries, last)
}

func (c *crrRunner) fail(op string, err error) (bool, string) {
	kind := op + ": " + rootCause(err)
	c.errs[kind]++
	return false, kind
}

// rootCause is the innermost error text ("connection refused", "i/o timeout").
func rootCause(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}

// reuseAddr sets SO_REUSEADDR before bind, so a local port held only by a TIME_WAIT socket can be bound again.
func reuseAddr(_, _ string, rc syscall.RawConn) error {
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	}); err != nil {
		return err
	}
	return serr
}
