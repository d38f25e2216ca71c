package app

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/meshbench/meshbench/internal/interrupt"
)

// Annotations of a verb's cobra command that say what a signal interrupts (signalNoticeFor reads them): a verb
// without them changes nothing that a signal could leave half done.
const (
	annotationSignalCleanup  = "meshbench.dev/signal-cleanup"
	annotationSignalLeftover = "meshbench.dev/signal-leftover"
)

// signalAnnotations are the annotations of a verb that, after the first signal, still cleans up (cleanup: what it
// removes or restores, "" for none) and may leave something behind when a second signal abandons that (leftover:
// what, and how to remove it).
func signalAnnotations(cleanup, leftover string) map[string]string {
	return map[string]string{annotationSignalCleanup: cleanup, annotationSignalLeftover: leftover}
}

// signalNotice is what the signal messages of one invocation say: what the verb cleans up after the first signal and
// what a second one may leave behind.
type signalNotice struct {
	cleanup, leftover string
}

// signalNoticeFor finds the verb of the command line args (as Execute will) and reads its signal annotations: the
// messages of `plan` do not speak of namespaces that do not exist. An unknown verb gets the notice of a verb that
// changes nothing.
func signalNoticeFor(args []string) signalNotice {
	var discard bytes.Buffer
	root := newRootCommand(Streams{In: strings.NewReader(""), Out: &discard, ErrOut: &discard})
	c, _, err := root.Find(args)
	if err != nil || c == nil {
		return signalNotice{}
	}
	return signalNotice{cleanup: c.Annotations[annotationSignalCleanup], leftover: c.Annotations[annotationSignalLeftover]}
}

// signalContext is Main's context: SIGINT or SIGTERM cancels it with an *interrupt.SignalError cause (the verbs
// clean up, Execute exits 130 or 143); a second signal during cleanup prints what may be left and calls exit with
// the first signal's code at once (the user insisted: cleanup is abandoned).
func signalContext(streams Streams, exit func(int), n signalNotice) (context.Context, func()) {
	return interrupt.Notify(context.Background(), interrupt.Handler{
		OnFirst: func(se *interrupt.SignalError) { fmt.Fprint(streams.ErrOut, firstSignalText(se, n)) },
		OnSecond: func(first, second *interrupt.SignalError) {
			fmt.Fprint(streams.ErrOut, secondSignalText(first, second, n))
			exit(first.ExitCode())
		},
	}, os.Interrupt, syscall.SIGTERM)
}

// firstSignalText tells the user what the first signal does, and what a second one would.
func firstSignalText(se *interrupt.SignalError, n signalNotice) string {
	switch {
	case n.cleanup != "":
		return fmt.Sprintf("\n%s: stopping; cleaning up (%s) before exiting with %d. Send it again to exit at once without cleanup.\n",
			se.Name(), n.cleanup, se.ExitCode())
	case n.leftover != "":
		return fmt.Sprintf("\n%s: stopping and exiting with %d; %s. Send it again to exit at once.\n", se.Name(), se.ExitCode(), n.leftover)
	}
	return fmt.Sprintf("\n%s: stopping and exiting with %d; nothing to clean up. Send it again to exit at once.\n", se.Name(), se.ExitCode())
}

// secondSignalText is printed when a second signal abandons cleanup: what may be left behind and how to remove it.
func secondSignalText(first, second *interrupt.SignalError, n signalNotice) string {
	during := ""
	if n.cleanup != "" {
		during = " during cleanup"
	}
	s := fmt.Sprintf("\n%s%s: exiting now with %d (interrupted by %s).", second.Name(), during, first.ExitCode(), first.Name())
	if n.leftover != "" {
		s += " " + n.leftover
	}
	return s + "\n"
}

// Signal annotations of the verbs that change the cluster (a fresh map for each command).
func runSignal() map[string]string {
	return signalAnnotations("load clients, app namespaces, namespace labels",
		"The cluster may still hold this run's namespaces, load clients and pods, and namespaces meshbench relabelled may keep their mode labels: "+
			"remove them with `meshbench cleanup --run RUN_ID` (the run ID is in the log and the run directory's name) or `meshbench cleanup --all`.")
}

func cniSignal() map[string]string {
	return signalAnnotations("the test namespace and its pods",
		"The cluster may still hold this run's test namespace and its pods: remove them with `meshbench cleanup --run RUN_ID` "+
			"(the run ID is in the log and the run directory's name) or `meshbench cleanup --all`.")
}

func cleanupSignal() map[string]string {
	return signalAnnotations("", "what is not deleted or restored yet stays: run the same meshbench cleanup again")
}

func scheduleSignal() map[string]string {
	return signalAnnotations("", "with --apply, the objects applied so far stay: run the same meshbench schedule --apply again to finish")
}
