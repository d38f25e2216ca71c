// Package inputfile is the one rule for every file meshbench reads: a regular file, under the cap of its Kind,
// checked with os.Stat before it is opened (a FIFO or a device would block the open or never end) and read through
// a reader that stops one byte past the cap. Anything else is an *Error naming the file, what it is, the cap and
// the fix; the commands exit 2 for it.
//
// Every kind of input file and its cap is defined once, in kinds.go; docs/reliability.md lists them (a test checks
// that it does).
//
// Foundation: it imports no project package, and every package, scenario and results included, may import it
// (internal/importrules).
package inputfile
