package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The Go floor: the least a Go client does per HTTP/1.1 keep-alive request, so that the bench can say how much of
// meshbench's distance to wrk is the Go runtime (goroutines parked on the netpoller, syscall entry and exit, sysmon)
// and how much is fortio's and meshbench's code on top. Like fortio's fast client it writes a fixed request and
// reads the response on a plain net.Conn per connection; unlike it, it records nothing (no histograms, no status
// map, no deadline, no allocation per request).

// floorLoad runs this program as the floor client, on the client CPU with GOMAXPROCS=1 like meshbench-agent.
func floorLoad(ctx context.Context, o options, target string) (clientRun, error) {
	self, err := os.Executable()
	if err != nil {
		return clientRun{}, fmt.Errorf("go floor: %w", err)
	}
	cmd := exec.CommandContext(ctx, "taskset", "-c", o.clientCPU, self, "-floor-client", target,
		"-connections", strconv.Itoa(o.connections), "-duration", o.duration.String())
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.Stderr = os.Stderr
	out, cpu, wall, err := runClientCmd(cmd)
	if err != nil {
		return clientRun{}, fmt.Errorf("go floor: %w", err)
	}
	r, err := parseFloor(out)
	if err != nil {
		return clientRun{}, err
	}
	r.cpu, r.wall = cpu, wall
	return r, nil
}

var floorLine = regexp.MustCompile(`^([0-9]+) requests in ([0-9.]+)s\n$`)

// parseFloor reads runFloorClient's one line.
func parseFloor(out []byte) (clientRun, error) {
	m := floorLine.FindSubmatch(out)
	if m == nil {
		return clientRun{}, fmt.Errorf("go floor: unexpected output %q", out)
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64) // the pattern admits digits only
	secs, err := strconv.ParseFloat(string(m[2]), 64)
	if err != nil || secs <= 0 {
		return clientRun{}, fmt.Errorf("go floor: bad elapsed time in %q", out)
	}
	return clientRun{qps: float64(n) / secs, requests: n}, nil
}

// runFloorClient loads target (http://host:port/path) with conns keep-alive connections for d and prints
// "N requests in Ss". Any response other than a 200 with a Content-Length fails the run: the floor must do the work
// fortio's fast client does, not less.
func runFloorClient(target string, conns int, d time.Duration, stdout io.Writer) error {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("want an http://host:port/ URL, got %q", target)
	}
	path := u.RequestURI()
	req := []byte("GET " + path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUser-Agent: meshbench-floor\r\n\r\n")
	var total atomic.Int64
	errs := make([]error, conns)
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() {
			c, err := net.Dial("tcp", u.Host)
			if err != nil {
				errs[i] = err
				return
			}
			defer c.Close()
			r := bufio.NewReaderSize(c, 16<<10)
			var n int64
			for time.Now().Before(end) {
				if _, err := c.Write(req); err != nil {
					errs[i] = err
					return
				}
				if err := readResponse(r); err != nil {
					errs[i] = err
					return
				}
				n++
			}
			total.Add(n)
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%d requests in %.6fs\n", total.Load(), elapsed.Seconds())
	return err
}

var (
	status200     = []byte("HTTP/1.1 200 ")
	contentLength = []byte("content-length:")
)

// readResponse reads one response: status line (200 only), headers, and a Content-Length body.
func readResponse(r *bufio.Reader) error {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(line, status200) {
		return fmt.Errorf("status line %q: want 200", bytes.TrimSpace(line))
	}
	length := int64(-1)
	for {
		line, err = r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			break
		}
		if len(line) > len(contentLength) && bytes.EqualFold(line[:len(contentLength)], contentLength) {
			if length = parseLength(bytes.TrimSpace(line[len(contentLength):])); length < 0 {
				return fmt.Errorf("bad %q", bytes.TrimSpace(line))
			}
		}
	}
	if length < 0 {
		return errors.New("response without Content-Length")
	}
	_, err = r.Discard(int(length))
	return err
}

// parseLength is a Content-Length value, -1 when it is not one (no allocation, as in fortio's ParseDecimal).
func parseLength(b []byte) int64 {
	if len(b) == 0 || len(b) > 18 {
		return -1
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int64(c-'0')
	}
	return n
}
