package hbonenode

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sys/unix"

	cniconfig "istio.io/istio/cni/pkg/config"
	cniiptables "istio.io/istio/cni/pkg/iptables"
	"istio.io/istio/cni/pkg/nftables"
	"istio.io/istio/pkg/workloadapi"
	dep "istio.io/istio/tools/istio-iptables/pkg/dependencies"
)

// The in-pod test runs the node proxy against the pin's own in-pod nftables rules (cni/pkg/nftables
// AppendInpodRules, what the istio-cni agent applies in every ambient pod) in network namespaces it creates:
//
//	netns "node" (the node and the node proxy pod): veths to a (198.18.1.1), b (198.18.2.1), c (198.18.3.1)
//	netns a: enrolled pod mounted-certs/client 198.18.1.2, in-pod rules
//	netns b: enrolled pod mounted-certs/server 198.18.2.2, in-pod rules, echo app on 8080
//	netns c: a pod outside the mesh, 198.18.3.2, echo app on 9090
//
// The parent test creates and removes the namespaces and runs itself again inside "node" (so every socket the
// node proxy opens outside a pod, like pkg/hbone's HTTP/2 dials, starts there); that child does the checks. No
// traffic leaves the namespaces; the host's own netns gets no interface, route or rule.

const netnsChildEnv = "HBONE_NODE_NETNS_CHILD"

type netnsPlan struct {
	Node, A, B, C string // netns names under /run/netns
	IstioDir      string
}

var (
	ipA = netip.MustParseAddr("198.18.1.2")
	ipB = netip.MustParseAddr("198.18.2.2")
	ipC = netip.MustParseAddr("198.18.3.2")
)

func TestInPodRulesNetns(t *testing.T) {
	if plan := os.Getenv(netnsChildEnv); plan != "" {
		var p netnsPlan
		if err := json.Unmarshal([]byte(plan), &p); err != nil {
			t.Fatal(err)
		}
		netnsChild(t, p)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces (CI runs as root)")
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (iproute2, nftables)", tool)
		}
	}
	suffix := strconv.Itoa(os.Getpid())
	p := netnsPlan{Node: "hbt-node-" + suffix, A: "hbt-a-" + suffix, B: "hbt-b-" + suffix, C: "hbt-c-" + suffix, IstioDir: istioModuleDir(t)}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, ns := range []string{p.Node, p.A, p.B, p.C} {
		run("netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		run("-n", ns, "link", "set", "lo", "up")
	}
	for i, ns := range []string{p.A, p.B, p.C} {
		veth, subnet := fmt.Sprintf("v%d", i+1), fmt.Sprintf("198.18.%d", i+1)
		run("-n", p.Node, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
		run("-n", p.Node, "addr", "add", subnet+".1/24", "dev", veth)
		run("-n", p.Node, "link", "set", veth, "up")
		run("-n", ns, "addr", "add", subnet+".2/24", "dev", "eth0")
		run("-n", ns, "link", "set", "eth0", "up")
		run("-n", ns, "route", "add", "default", "via", subnet+".1")
	}
	if out, err := exec.Command("ip", "netns", "exec", p.Node, "sysctl", "-qw", "net.ipv4.ip_forward=1").CombinedOutput(); err != nil {
		t.Fatalf("ip_forward in %s: %v\n%s", p.Node, err, out)
	}
	plan, _ := json.Marshal(p)
	cmd := exec.Command("ip", "netns", "exec", p.Node, os.Args[0], "-test.run", "^TestInPodRulesNetns$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), netnsChildEnv+"="+string(plan))
	out, err := cmd.CombinedOutput()
	t.Logf("child in netns %s:\n%s", p.Node, out)
	if err != nil || !strings.Contains(string(out), "--- PASS: TestInPodRulesNetns") {
		t.Fatalf("in-pod test failed: %v", err)
	}
}

// netnsEnv is the node proxy with pods a and b enrolled, inside the "node" netns.
type netnsEnv struct {
	fds        map[string]int // netns name → fd
	appB, appC *echoServer
	m          *Metrics
	wds        *WDS
}

func newNetnsEnv(t *testing.T, p netnsPlan) *netnsEnv {
	t.Helper()
	istioDirOnce.Do(func() { istioDir = p.IstioDir })
	e := &netnsEnv{fds: map[string]int{}}
	for _, ns := range []string{p.A, p.B, p.C} {
		fd, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		e.fds[ns] = fd
	}
	// The pin's in-pod rules in a and b, applied from inside each netns as the istio-cni agent does.
	podCfg := &cniconfig.AmbientConfig{HostProbeSNATAddress: netip.MustParseAddr("169.254.7.127")}
	for _, ns := range []string{p.A, p.B} {
		err := inNetns(e.fds[ns], func() error {
			_, pod, err := nftables.NewNftablesConfigurator(podCfg, podCfg, &dep.RealDependencies{}, &dep.RealDependencies{}, cniiptables.EmptyNlDeps())
			if err != nil {
				return err
			}
			_, err = pod.AppendInpodRules(cniconfig.PodLevelOverrides{})
			return err
		})
		if err != nil {
			t.Fatalf("in-pod rules in %s: %v", ns, err)
		}
	}
	e.appB = startEchoIn(t, e.fds[p.B], 8080)
	e.appC = startEchoIn(t, e.fds[p.C], 9090)

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	clientCert, root := mountedCert(t, "client", clientID)
	serverCert, _ := mountedCert(t, "server", serverID)
	trust, err := NewTrust("cluster.local", root)
	if err != nil {
		t.Fatal(err)
	}
	e.m = NewMetrics("test")
	certs := NewCerts(fixedSigner{clientID: clientCert, serverID: serverCert}, e.m, log, nil)
	tb := NewTables("cluster.local")
	for _, w := range []*workloadapi.Workload{
		{Uid: "Kubernetes//Pod/mounted-certs/client", Name: "client", Namespace: "mounted-certs", ServiceAccount: "client",
			Addresses: [][]byte{ipA.AsSlice()}, TunnelProtocol: workloadapi.TunnelProtocol_HBONE},
		{Uid: "Kubernetes//Pod/mounted-certs/server", Name: "server", Namespace: "mounted-certs", ServiceAccount: "server",
			Addresses: [][]byte{ipB.AsSlice()}, TunnelProtocol: workloadapi.TunnelProtocol_HBONE},
	} {
		tb.PutAddress(w.Uid, &workloadapi.Address{Type: &workloadapi.Address_Workload{Workload: w}})
	}
	e.wds = newLocalWDS(tb, log)
	n := NewNode(ctx, "cluster.local", certs, trust, e.wds, e.m, log)
	n.CertWait, n.DialTimeout = 3*time.Second, 3*time.Second
	for ns, info := range map[string]PodInfo{
		p.A: {UID: "uid-a", Name: "client", Namespace: "mounted-certs", ServiceAccount: "client"},
		p.B: {UID: "uid-b", Name: "server", Namespace: "mounted-certs", ServiceAccount: "server"},
	} {
		dup, err := unix.FcntlInt(uintptr(e.fds[ns]), unix.F_DUPFD_CLOEXEC, 0) // AddPod owns the fd it gets
		if err != nil {
			t.Fatal(err)
		}
		if err := n.AddPod(info, dup); err != nil {
			t.Fatalf("AddPod %s: %v", info.Name, err)
		}
		t.Cleanup(func() { n.DelPod(info.UID) })
	}
	return e
}

// counter reads an outbound (protocol, via, result) or inbound (protocol, result) counter.
func (e *netnsEnv) counter(lbl ...string) float64 {
	if len(lbl) == 3 {
		return testutil.ToFloat64(e.m.outbound.WithLabelValues(lbl...))
	}
	return testutil.ToFloat64(e.m.inbound.WithLabelValues(lbl...))
}

// dialFrom connects from inside netns ns, as an app there would.
func (e *netnsEnv) dialFrom(ns string, to netip.AddrPort) (net.Conn, error) {
	var c net.Conn
	err := inNetns(e.fds[ns], func() error {
		var err error
		c, err = (&net.Dialer{Timeout: 3 * time.Second}).Dial("tcp", to.String())
		return err
	})
	return c, err
}

// netnsChild runs inside the "node" netns.
func netnsChild(t *testing.T, p netnsPlan) {
	e := newNetnsEnv(t, p)
	counter, wds, appB, appC := e.counter, e.wds, e.appB, e.appC

	// a → b:8080: REDIRECTed to a's 15001, HBONE from this netns to b's 15008 (never redirected), delivered from
	// b's own netns (not redirected to 15006).
	c, err := e.dialFrom(p.A, netip.AddrPortFrom(ipB, 8080))
	if err != nil {
		t.Fatalf("a → b: %v", err)
	}
	if got := roundTrip(t, c, "ambient to ambient"); got != "ambient to ambient" {
		t.Fatalf("a → b echo = %q", got)
	}
	waitFor(t, func() bool { return counter("hbone", "allowed") == 1 })
	if got := counter("hbone", "node", "ok"); got != 1 {
		t.Errorf("outbound hbone via node ok = %v, want 1", got)
	}
	if got := counter("plaintext", "allowed"); got != 0 {
		t.Errorf("plaintext inbound = %v: the delivery was re-captured", got)
	}
	if got := redirectPackets(t, p.B, "15006"); got != 0 {
		t.Errorf("b's redirect to 15006 counted %d packets during HBONE traffic", got)
	}
	if got := redirectPackets(t, p.A, "15001"); got == 0 {
		t.Error("a's redirect to 15001 counted no packet: the connection was not captured")
	}

	// a → c:9090: c is not in the mesh (unknown to WDS): passthrough, plaintext from a's netns with the mark.
	c, err = e.dialFrom(p.A, netip.AddrPortFrom(ipC, 9090))
	if err != nil {
		t.Fatalf("a → c: %v", err)
	}
	if got := roundTrip(t, c, "to outside the mesh"); got != "to outside the mesh" {
		t.Fatalf("a → c echo = %q", got)
	}
	if got := counter("tcp", "passthrough", "ok"); got != 1 {
		t.Errorf("outbound passthrough ok = %v, want 1", got)
	}

	// c → b:8080 plaintext: b's 15006, allowed without policies...
	c, err = e.dialFrom(p.C, netip.AddrPortFrom(ipB, 8080))
	if err != nil {
		t.Fatalf("c → b: %v", err)
	}
	if got := roundTrip(t, c, "plaintext in"); got != "plaintext in" {
		t.Fatalf("c → b echo = %q", got)
	}
	waitFor(t, func() bool { return counter("plaintext", "allowed") == 1 })
	// ...and refused once istiod's STRICT policy applies to b.
	wds.Update(func(tb *Tables) {
		s := staticStrict()
		tb.PutPolicy("istio-system/istio_converted_static_strict", s)
		tb.WorkloadByName("mounted-certs", "server").AuthorizationPolicies = []string{"istio-system/istio_converted_static_strict"}
	})
	before := appB.accepted.Load()
	c, err = e.dialFrom(p.C, netip.AddrPortFrom(ipB, 8080))
	if err == nil {
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		_, _ = io.WriteString(c, "plaintext under STRICT")
		k, rerr := c.Read(make([]byte, 32))
		c.Close()
		if rerr == nil {
			t.Errorf("plaintext under STRICT got %d bytes back", k)
		}
	}
	waitFor(t, func() bool { return counter("plaintext", "denied") == 1 })
	if appB.accepted.Load() != before {
		t.Error("b's app accepted the plaintext connection under STRICT")
	}
	// HBONE still passes under STRICT.
	c, err = e.dialFrom(p.A, netip.AddrPortFrom(ipB, 8080))
	if err != nil {
		t.Fatalf("a → b under STRICT: %v", err)
	}
	if got := roundTrip(t, c, "mTLS under STRICT"); got != "mTLS under STRICT" {
		t.Fatalf("a → b under STRICT echo = %q", got)
	}
	if appC.accepted.Load() != 1 {
		t.Errorf("c's app accepted %d connections, want 1", appC.accepted.Load())
	}
}

// startEchoIn runs an echo app on port inside netns fd.
func startEchoIn(t *testing.T, fd, port int) *echoServer {
	t.Helper()
	ln, err := listenIn(fd, port)
	if err != nil {
		t.Fatal(err)
	}
	return serveEcho(t, ln)
}

var packetsRE = regexp.MustCompile(`counter packets (\d+) bytes \d+ redirect to :(\d+)`)

// redirectPackets reads the packet counter of netns ns's in-pod redirect rule to port.
func redirectPackets(t *testing.T, ns, port string) int {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns, "nft", "list", "table", "inet", "istio-ambient-nat").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list in %s: %v\n%s", ns, err, out)
	}
	for _, m := range packetsRE.FindAllStringSubmatch(string(out), -1) {
		if m[2] == port {
			k, _ := strconv.Atoi(m[1])
			return k
		}
	}
	t.Fatalf("no redirect rule to :%s in %s:\n%s", port, ns, out)
	return 0
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
