// Package interrupt turns SIGINT and SIGTERM into a context cause (*SignalError), so everything downstream tells
// "the user stopped it" from "it failed" and main exits with 128+signal; a second signal during cleanup exits at
// once (OnSecond). Leaf: the cobra layer and orchestrate share one type.
package interrupt
