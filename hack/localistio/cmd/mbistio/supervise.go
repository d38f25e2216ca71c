package main

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// cmdSupervise runs CMD as a child and ends it (SIGTERM, then SIGKILL after -grace) when the cluster it was set up
// for is gone: -watch-file (the cluster CA) disappears or changes. A host agent must not outlive its cluster: the
// cluster harness can be torn down and re-created without `make istio-down` (its own scripts, a CI job's cleanup),
// and an orphaned node agent would keep node2's network namespace alive and its host rules in place. SIGTERM and
// SIGINT are forwarded, so stopping the supervisor stops the agent cleanly.
//
//	mbistio supervise -watch-file $S/pki/ca.crt -- install-cni ...
func cmdSupervise(args []string) error {
	fs := flag.NewFlagSet("supervise", flag.ExitOnError)
	watch := fs.String("watch-file", "", "end the child when this file disappears or changes (required)")
	every := fs.Duration("interval", 2*time.Second, "how often to look at -watch-file")
	grace := fs.Duration("grace", 15*time.Second, "SIGKILL the child this long after SIGTERM")
	_ = fs.Parse(args)
	if *watch == "" || fs.NArg() == 0 {
		return errors.New("usage: supervise -watch-file FILE -- CMD [ARGS...]")
	}
	want, err := fileSum(*watch)
	if err != nil {
		return fmt.Errorf("watch file: %w", err)
	}
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	tick := time.NewTicker(*every)
	defer tick.Stop()
	stop := func(why string) {
		log.Printf("supervise: %s: stopping %s (pid %d)", why, fs.Arg(0), cmd.Process.Pid)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			done <- err
		case <-time.After(*grace):
			log.Printf("supervise: %s still running after %s: SIGKILL", fs.Arg(0), *grace)
			_ = cmd.Process.Kill()
		}
	}
	misses := 0
	for {
		select {
		case err := <-done:
			return err
		case s := <-sigs:
			stop(fmt.Sprintf("got %v", s))
			return <-done
		case <-tick.C:
			if got, err := fileSum(*watch); err == nil && bytes.Equal(got, want) {
				misses = 0
				continue
			}
			if misses++; misses >= 2 {
				stop(fmt.Sprintf("%s is gone or changed (the cluster was torn down)", *watch))
				return <-done
			}
		}
	}
}

func fileSum(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := sha256.Sum256(b)
	return s[:], nil
}
