package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/internal/cgroupstat"
)

const cgroupsHelp = "run a command and sample this container's cgroup (CPU counter, memory working set) every interval into DIR/NAME.jsonl; `cgroups dump` prints a window of them"

// exitCodeError makes mainE exit with the wrapped command's code.
type exitCodeError struct{ code int }

func (e exitCodeError) Error() string { return fmt.Sprintf("command exited with code %d", e.code) }

// forwarded are the signals the wrapper passes on to its command (the kubelet stops a container with SIGTERM to
// its PID 1, which is the wrapper).
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// runCgroups is `cgroups --name N --dir D [--interval 1s] -- cmd args...`, `cgroups dump ...` or
// `cgroups install --to DIR`.
func runCgroups(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "dump" {
		return runCgroupsDump(args[1:], os.Stdout)
	}
	if len(args) > 0 && args[0] == "install" {
		return runCgroupsInstall(args[1:])
	}
	opts, err := parseWrap(args)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	code, err := wrap(ctx, opts, sigs, os.Stderr)
	if err != nil {
		return err
	}
	if code != 0 {
		return exitCodeError{code}
	}
	return nil
}

type wrapOpts struct {
	name, dir, root string
	interval        time.Duration
	argv            []string
}

func parseWrap(args []string) (wrapOpts, error) {
	fs := flag.NewFlagSet("cgroups", flag.ContinueOnError)
	var o wrapOpts
	fs.StringVar(&o.name, "name", "", "container name: the samples go to DIR/NAME.jsonl")
	fs.StringVar(&o.dir, "dir", "", "directory of the sample files (an emptyDir shared by the pod's containers)")
	fs.StringVar(&o.root, "cgroup-root", "/sys/fs/cgroup", "the container's cgroup mount")
	fs.DurationVar(&o.interval, "interval", time.Second, "sampling interval")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.argv = fs.Args()
	switch {
	case o.name == "" || strings.ContainsAny(o.name, "/\\") || o.dir == "":
		return o, errors.New("--name (no slashes) and --dir are required")
	case o.interval <= 0:
		return o, errors.New("--interval must be positive")
	case len(o.argv) == 0:
		return o, errors.New("no command: usage is cgroups --name N --dir D -- CMD [ARGS]")
	}
	return o, nil
}

// wrap runs the command, forwards sigs to it and samples the cgroup until it exits; it returns the command's
// exit code (128+n for a signal, like a shell). Sampling problems are reported on stderr and never stop the
// command: the test container must run whether or not its resource use can be read.
func wrap(ctx context.Context, o wrapOpts, sigs <-chan os.Signal, stderr io.Writer) (int, error) {
	cmd := exec.Command(o.argv[0], o.argv[1:]...) // not CommandContext: the command ends on its own or by a forwarded signal
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, stderr
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", o.argv[0], err)
	}
	done := make(chan int, 1)
	go func() { done <- waitChild(cmd.Process.Pid) }()

	sample := sampler(o, stderr)
	sample()
	tick := time.NewTicker(o.interval)
	defer tick.Stop()
	for {
		select {
		case code := <-done:
			sample() // the last reading covers the command's end
			return code, nil
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
		case <-tick.C:
			sample()
		case <-ctx.Done():
			// main's NotifyContext saw SIGINT/SIGTERM: sigs carries it to the command too; keep waiting for it.
			ctx = context.Background()
		}
	}
}

// waitChild waits for the command. As PID 1 of a container (the wrapper is the container's command) it also reaps
// the orphans reparented to it (netserver's per-test children): nobody else would.
func waitChild(pid int) int {
	for {
		var ws syscall.WaitStatus
		target := pid
		if os.Getpid() == 1 {
			target = -1
		}
		got, err := syscall.Wait4(target, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 1
		}
		if got != pid {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}

// sampler returns the function that appends one reading to DIR/NAME.jsonl; after a failure it warns once and
// keeps trying (the file or the cgroup may appear later, a full disk may clear).
func sampler(o wrapOpts, stderr io.Writer) func() {
	path := filepath.Join(o.dir, o.name+".jsonl")
	warned := false
	warn := func(err error) {
		if !warned {
			fmt.Fprintf(stderr, "meshbench-agent cgroups: %v (the command runs on; no resource samples)\n", err)
			warned = true
		}
	}
	var r *cgroupstat.Reader
	return func() {
		if r == nil {
			var err error
			if r, err = cgroupstat.Open(os.DirFS(o.root)); err != nil {
				warn(err)
				return
			}
		}
		st, err := r.Read()
		if err != nil {
			warn(err)
			return
		}
		line, _ := json.Marshal(cgroupstat.Sample{T: time.Now().UTC(), CPUNs: st.CPUNs, MemBytes: st.MemBytes})
		if err := appendLine(path, line); err != nil {
			warn(err)
		}
	}
}

func appendLine(path string, line []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	return errors.Join(err, f.Close())
}

// runCgroupsDump prints the samples of every DIR/*.jsonl inside [--since, --until] as a cgroupstat.Dump, or with
// --summary each container's cgroupstat.Summary.
func runCgroupsDump(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("cgroups dump", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory of the sample files")
	sinceS := fs.String("since", "", "window start, RFC 3339")
	untilS := fs.String("until", "", "window end, RFC 3339 (default: now)")
	summary := fs.Bool("summary", false, "print each container's CPU (millicores) and memory (MiB) min/avg/max instead of its samples")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *sinceS == "" {
		return errors.New("--dir and --since are required")
	}
	since, err := time.Parse(time.RFC3339Nano, *sinceS)
	if err != nil {
		return fmt.Errorf("--since: %w", err)
	}
	until := time.Now()
	if *untilS != "" {
		if until, err = time.Parse(time.RFC3339Nano, *untilS); err != nil {
			return fmt.Errorf("--until: %w", err)
		}
	}
	d, err := dumpDir(*dir, since, until)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	if !*summary {
		return enc.Encode(d)
	}
	type out struct {
		Containers map[string]cgroupstat.Summary `json:"containers"`
		Errors     map[string]string             `json:"errors,omitempty"`
	}
	o := out{Containers: map[string]cgroupstat.Summary{}, Errors: d.Errors}
	for name, s := range d.Containers {
		sum, err := cgroupstat.Summarize(s, since, until)
		if err != nil {
			if o.Errors == nil {
				o.Errors = map[string]string{}
			}
			o.Errors[name] = err.Error()
			continue
		}
		o.Containers[name] = sum
	}
	return enc.Encode(o)
}

// dumpDir reads the sample files of dir, keeping the samples inside [since, until].
func dumpDir(dir string, since, until time.Time) (cgroupstat.Dump, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return cgroupstat.Dump{}, err
	}
	if len(files) == 0 {
		return cgroupstat.Dump{}, fmt.Errorf("no sample files in %s", dir)
	}
	sort.Strings(files)
	d := cgroupstat.Dump{Containers: map[string][]cgroupstat.Sample{}}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		s, err := readSampleFile(f)
		if err != nil {
			if d.Errors == nil {
				d.Errors = map[string]string{}
			}
			d.Errors[name] = err.Error()
			continue
		}
		in := []cgroupstat.Sample{}
		for _, x := range s {
			if !x.T.Before(since) && !x.T.After(until) {
				in = append(in, x)
			}
		}
		d.Containers[name] = in
	}
	return d, nil
}

func readSampleFile(path string) ([]cgroupstat.Sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return cgroupstat.ReadSamples(f)
}

// runCgroupsInstall copies this binary to DIR/meshbench-agent: the init container of a cni test pod puts it in an
// emptyDir so containers of the network image (which has no agent) can run the wrapper. The agent image holds
// only this binary (images.BinaryLayer), no cp.
func runCgroupsInstall(args []string) error {
	fs := flag.NewFlagSet("cgroups install", flag.ContinueOnError)
	to := fs.String("to", "", "directory to copy the agent binary into")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *to == "" {
		return errors.New("--to is required")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the agent binary: %w", err)
	}
	return copyExecutable(self, filepath.Join(*to, filepath.Base(self)))
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst) // a container never sees a half-written binary
}
