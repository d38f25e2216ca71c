// Command coredns is a minimal CoreDNS v1.15.0 (kubernetes, cache, errors, health, log, ready plugins): the cluster
// DNS of the local cluster, deployed as Service kube-system/kube-dns on 10.96.0.10.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() { coremain.Run() }
