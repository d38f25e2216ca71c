// Command istio-standin is a TEST DOUBLE for Istio's proxyv2 image (pilot-agent + Envoy), for the local test
// cluster, which cannot build or pull Envoy. It is never shipped. It does NOT proxy traffic. It:
//   - exits 0 at once for init-style invocations (istio-iptables, --run-validation, wait, request ...),
//   - otherwise ("proxy sidecar|router|waypoint ...") serves the health/metrics ports the
//     injected pod spec probes: 15021 /healthz/ready, 15020 /stats/prometheus + /app-health/*,
//     15090 /stats/prometheus, 15000 admin, 15008/15001/15006 (accept + answer 200), and sleeps
//     until SIGTERM/SIGINT or POST /quitquitquit.
//
// The image built from it (docker.io/istio/proxyv2:<tag>-distroless, see hack/localistio/build.sh) carries the OCI
// label meshbench.dev/test-standin=true, and every response has the header x-istio-standin.
package main

import (
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

var start = time.Now()

// version is set by hack/localistio/build.sh (-X main.version=...).
var version = "dev"

func main() {
	args := os.Args[1:]
	joined := strings.Join(args, " ")
	log.Printf("istio-standin pid=%d args=%q", os.Getpid(), args)
	first := ""
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			first = a
			break
		}
	}
	switch {
	case first == "version":
		fmt.Println(version)
		return
	case first == "istio-iptables", strings.Contains(joined, "--run-validation"),
		first == "wait", first == "request", first == "istio-clean-iptables":
		log.Printf("init-style invocation %q: no-op, exit 0", first)
		return
	}
	role := "sidecar"
	if len(args) >= 2 && args[0] == "proxy" {
		role = args[1]
	}
	quit := make(chan struct{}, 1)
	metrics := func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# TYPE istio_standin_up gauge\nistio_standin_up{role=%q,version=%q} 1\n", role, version)
		fmt.Fprintf(w, "# TYPE istio_standin_uptime_seconds gauge\nistio_standin_uptime_seconds %f\n", time.Since(start).Seconds())
	}
	ok := func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/quitquitquit") && r.Method == http.MethodPost {
			select {
			case quit <- struct{}{}:
			default:
			}
		}
		w.Header().Set("x-istio-standin", role)
		fmt.Fprintln(w, "ok")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/stats/prometheus", metrics)
	mux.HandleFunc("/app-health/", appHealth)
	mux.HandleFunc("/", ok)
	for _, p := range []string{"15000", "15001", "15006", "15008", "15020", "15021", "15090"} {
		go func() {
			if err := http.ListenAndServe(":"+p, mux); err != nil {
				log.Printf("listen :%s: %v", p, err)
			}
		}()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sig:
		log.Printf("got %v, exiting", s)
	case <-quit:
		log.Printf("quitquitquit, exiting")
	}
}

// appHealth forwards Istio-rewritten app probes (/app-health/<ctr>/{readyz,livez,startupz})
// to the original httpGet/tcpSocket probe described in ISTIO_KUBE_APP_PROBERS, like pilot-agent does.
func appHealth(w http.ResponseWriter, r *http.Request) {
	type probe struct {
		HTTPGet *struct {
			Path   string          `json:"path"`
			Port   json.RawMessage `json:"port"`
			Scheme string          `json:"scheme"`
		} `json:"httpGet"`
		TCPSocket *struct {
			Port json.RawMessage `json:"port"`
		} `json:"tcpSocket"`
		TimeoutSeconds int `json:"timeoutSeconds"`
	}
	probes := map[string]probe{}
	_ = json.Unmarshal([]byte(os.Getenv("ISTIO_KUBE_APP_PROBERS")), &probes)
	p, ok := probes[r.URL.Path]
	if !ok {
		http.Error(w, "unknown probe "+r.URL.Path, http.StatusNotFound)
		return
	}
	to := time.Duration(p.TimeoutSeconds) * time.Second
	if to == 0 {
		to = time.Second
	}
	port := func(raw json.RawMessage) string { return strings.Trim(string(raw), `"`) }
	switch {
	case p.HTTPGet != nil:
		scheme := strings.ToLower(p.HTTPGet.Scheme)
		if scheme == "" {
			scheme = "http"
		}
		c := &http.Client{Timeout: to}
		resp, err := c.Get(fmt.Sprintf("%s://127.0.0.1:%s%s", scheme, port(p.HTTPGet.Port), p.HTTPGet.Path))
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
	case p.TCPSocket != nil:
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port(p.TCPSocket.Port), to)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		c.Close()
		fmt.Fprintln(w, "ok")
	default:
		fmt.Fprintln(w, "ok")
	}
}
