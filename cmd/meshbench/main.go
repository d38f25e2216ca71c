// Command meshbench measures what an Istio data plane costs on your Kubernetes cluster.
package main

import (
	"os"

	"github.com/meshbench/meshbench/cmd/meshbench/app"
)

func main() { os.Exit(app.Main()) }
