// Package interrupt is the process's answer to SIGINT and SIGTERM: the first signal cancels the context with a
// *SignalError cause, so everything downstream can tell "the user stopped it" from "it failed" and main can exit with
// the shell's 128+signal code; a second signal, while cleanup still runs, is the user insisting: OnSecond exits at once.
//
// Leaf: it imports no project package, so the cobra layer and the composition packages (orchestrate writes the
// signal into run.json) share one type.
package interrupt
