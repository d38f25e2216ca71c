// Package inputfile is the one rule for every file meshbench reads: a regular file under the cap of its Kind (kinds.go,
// listed in docs/reliability.md), checked with os.Stat before it is opened and read through a reader that stops one
// byte past the cap; else an *Error naming the file and the fix (exit 2). Foundation: it imports no project package.
package inputfile
