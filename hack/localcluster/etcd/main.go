// Command etcd is etcd v3.6.16 built from the Go module proxy (etcdmain), the etcd the local cluster runs.
// The etcd root module has replace directives, so it cannot be "go install"ed; this one-line main is the way.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
