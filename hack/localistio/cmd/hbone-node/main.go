// Command hbone-node is the "Go HBONE node proxy (test double; not ztunnel's cost)": a TEST DOUBLE for ztunnel,
// never shipped, run as <registry>/istio/ztunnel:<tag>-distroless inside Istio's own ztunnel DaemonSet (service
// account istio-system/ztunnel), configured by that DaemonSet's environment and mounts; ztunnel's own arguments are
// ignored. hack/localistio/README.md ("The Go HBONE node proxy") says what it does and where it differs from ztunnel.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/hack/localistio/hbonenode"

	istiolog "istio.io/istio/pkg/log"
)

// version and istioVersion are set by hack/localistio/build.sh (-X main.version=... -X main.istioVersion=...).
var (
	version      = "dev"
	istioVersion = "1.31-dev"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log); err != nil {
		log.Error("hbone-node stopped", "err", err)
		os.Exit(1)
	}
}

type flags struct {
	sock, health, admin, rootCert, token string
}

func run(log *slog.Logger) error {
	var f flags
	flag.StringVar(&f.sock, "sock", "", "istio-cni ZDS socket (default: /var/run/ztunnel/$NODE_NAME/ztunnel.sock when that directory exists, else /var/run/ztunnel/ztunnel.sock)")
	flag.StringVar(&f.health, "health", ":15021", "readiness listener")
	flag.StringVar(&f.admin, "admin", ":15020", "metrics and debug listener")
	flag.StringVar(&f.rootCert, "root-cert", "/var/run/secrets/istio/root-cert.pem", "mesh root certificate (ConfigMap istio-ca-root-cert)")
	flag.StringVar(&f.token, "token", "/var/run/secrets/tokens/istio-token", "projected service account token (audience istio-ca)")
	flag.Parse() // stops at the first non-flag: ztunnel's own args ("proxy ztunnel") are ignored

	// pkg/hbone logs three Info lines per connection.
	if sc := istiolog.FindScope("hbone"); sc != nil {
		sc.SetOutputLevel(istiolog.WarnLevel)
	}
	td := envOr("TRUST_DOMAIN", "cluster.local")
	clusterID := envOr("ISTIO_META_CLUSTER_ID", "Kubernetes")
	node := os.Getenv("NODE_NAME")
	log.Info(hbonenode.Description+" "+version, "node", node, "pod", os.Getenv("POD_NAMESPACE")+"/"+os.Getenv("POD_NAME"))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	roots, err := os.ReadFile(f.rootCert)
	if err != nil {
		return fmt.Errorf("root certificate (-root-cert): %w", err)
	}
	trust, err := hbonenode.NewTrust(td, roots)
	if err != nil {
		return fmt.Errorf("root certificate %s: %w", f.rootCert, err)
	}
	ca, err := hbonenode.DialCA(hbonenode.CAConfig{Address: envOr("CA_ADDRESS", "istiod.istio-system.svc:15012"),
		RootCert: f.rootCert, TokenFile: f.token, ClusterID: clusterID})
	if err != nil {
		return err
	}
	defer ca.Close()
	m := hbonenode.NewMetrics(version)
	certs := hbonenode.NewCerts(ca, m, log, func(c *hbonenode.Cert) {
		if root, ok := c.Root(); ok {
			trust.Add(root)
		}
	})
	wds, err := hbonenode.NewWDS(hbonenode.WDSConfig{Address: envOr("XDS_ADDRESS", "istiod.istio-system.svc:15012"),
		RootCert: f.rootCert, TokenFile: f.token, ClusterID: clusterID, PodName: os.Getenv("POD_NAME"),
		PodNamespace: envOr("POD_NAMESPACE", "istio-system"), NodeName: node, InstanceIP: os.Getenv("INSTANCE_IP"),
		IstioVersion: istioVersion}, hbonenode.NewTables(td), m, log)
	if err != nil {
		return err
	}
	go wds.Run(ctx)
	n := hbonenode.NewNode(ctx, td, certs, trust, wds, m, log)
	zds := &hbonenode.ZDS{Socket: f.sock, Node: node, Pods: n, Log: log, Metrics: m}

	ready := func() error {
		if !zds.Connected() {
			return errors.New("not connected to the istio-cni agent")
		}
		select {
		case <-wds.Synced():
			return nil
		default:
			return errors.New("workload discovery not synced yet")
		}
	}
	servers := []*http.Server{
		{Addr: f.health, Handler: hbonenode.ReadyHandler(ready), ReadHeaderTimeout: 5 * time.Second},
		{Addr: f.admin, Handler: hbonenode.AdminHandler(m, certs, wds), ReadHeaderTimeout: 5 * time.Second},
	}
	errc := make(chan error, len(servers))
	for _, s := range servers {
		go func() { errc <- fmt.Errorf("%s: %w", s.Addr, s.ListenAndServe()) }()
	}
	go zds.Run(ctx)
	select {
	case <-ctx.Done():
		log.Info("shutting down")
		for _, s := range servers {
			s.Close()
		}
		return nil
	case err := <-errc:
		return err
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
