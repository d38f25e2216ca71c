package cni

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/nettool"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// deploy starts the client, picks the RR tool, starts the other pods and the Service, and verifies placement and
// listening servers. Pods that fail are recorded in r.broken (their cases fail with the reason); an error is
// returned only when nothing can run.
func (r *Bench) deploy(ctx context.Context) error {
	client := r.objs.clientPod()
	if err := createPod(ctx, r.d.Kube, client); err != nil {
		return err
	}
	ready, failed := waitPods(ctx, r.d.Clock, r.d.Kube, r.cfg.Namespace, []string{client.Name}, r.cfg.ReadyTimeout)
	if err := failed[client.Name]; err != nil {
		return fmt.Errorf("client pod (image %s) on %s: %w", r.cfg.Images.Network, r.objs.Placement.ClientNode, err)
	}
	r.pods[RoleClient] = ready[client.Name]
	r.pinNetworkImage(ready[client.Name])
	r.toolVersions(ctx)

	tool, err := r.rrTool(ctx)
	if err != nil {
		return err
	}
	r.objs.RRTool = tool
	r.report.RRTool = tool
	r.cases = withRRTool(r.cases, tool)

	roles := r.objs.rolesAfterClient()
	var names []string
	for _, role := range roles {
		p := r.objs.rolePod(role)
		if err := createPod(ctx, r.d.Kube, p); err != nil {
			r.broken[role] = err
			continue
		}
		names = append(names, p.Name)
	}
	if r.objs.Service {
		if err := r.createService(ctx); err != nil {
			r.report.Notes = append(r.report.Notes, err.Error())
		}
	}
	r.d.Log.Info("waiting for the test pods", "pods", names)
	ready, failed = waitPods(ctx, r.d.Clock, r.d.Kube, r.cfg.Namespace, names, r.cfg.ReadyTimeout)
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted while deploying: %w", ctx.Err())
	}
	for _, role := range roles {
		if p := ready[string(role)]; p != nil {
			r.pods[role] = p
		} else if err := failed[string(role)]; err != nil {
			r.broken[role] = err
		}
	}
	r.verifyPlacement()
	r.waitServers(ctx)
	if r.service != nil {
		if err := r.waitEndpoints(ctx); err != nil {
			r.report.Notes = append(r.report.Notes, err.Error())
			r.service = nil
		}
	}
	r.mtuFacts(ctx)
	return nil
}

// rrTool resolves spec.cni.rrTool: auto takes netperf when the network image has netperf and netserver.
func (r *Bench) rrTool(ctx context.Context) (nettool.Tool, error) {
	hasRR := slices.ContainsFunc(r.cases, func(c pathTest) bool {
		return c.Test == scenario.CNITestRR || c.Test == scenario.CNITestCRR
	})
	if !hasRR {
		return "", nil
	}
	want := r.cfg.CNI.RRTool
	if want == scenario.RRToolBuiltin {
		return nettool.ToolBuiltin, nil
	}
	out, err := r.execIn(ctx, RoleClient, containerNet, "which", "netperf", "netserver")
	found := err == nil && len(strings.Fields(out)) == 2
	switch {
	case found:
		return nettool.ToolNetperf, nil
	case want == scenario.RRToolNetperf:
		return "", fmt.Errorf("spec.cni.rrTool is netperf, but the network image %s has no netperf and netserver (which: %v); use rrTool auto or builtin",
			r.cfg.Images.Network, err)
	default:
		r.report.Notes = append(r.report.Notes, fmt.Sprintf("the network image %s has no netperf: TCP_RR and TCP_CRR use the built-in tool (%s, agent image %s)",
			r.cfg.Images.Network, nettool.ToolBuiltin, r.cfg.Images.Agent))
		return nettool.ToolBuiltin, nil
	}
}

func (r *Bench) createService(ctx context.Context) error {
	svc := r.objs.serviceObject()
	cctx, cancel := callCtx(ctx)
	defer cancel()
	got, err := r.d.Kube.CoreV1().Services(svc.Namespace).Create(cctx, svc, metav1.CreateOptions{FieldManager: "meshbench"})
	if err != nil {
		return fmt.Errorf("create Service %s: %w", svc.Name, err)
	}
	r.service = got
	r.report.Facts.ServiceClusterIP = got.Spec.ClusterIP
	return nil
}

// waitEndpoints waits until the Service's EndpointSlice lists server-remote as a ready endpoint (its only one).
func (r *Bench) waitEndpoints(ctx context.Context) error {
	backend := r.pods[RoleServerRemote]
	if backend == nil {
		return errors.New("the Service has no backend: server-remote is not running")
	}
	var last string
	err := poll(r.d.Clock, time.Minute).Until(ctx, func(ctx context.Context) (bool, error) {
		cctx, cancel := callCtx(ctx)
		defer cancel()
		l, err := r.d.Kube.DiscoveryV1().EndpointSlices(r.cfg.Namespace).List(cctx, metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=" + serviceName})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		var addrs []string
		for _, s := range l.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					addrs = append(addrs, e.Addresses...)
				}
			}
		}
		last = fmt.Sprintf("ready endpoints %v", addrs)
		return len(addrs) == 1 && sameAddr(addrs[0], backend.Status.PodIP), nil
	})
	if err != nil {
		return fmt.Errorf("service %s never had server-remote (%s) as its only ready endpoint (%s): %w", serviceName, backend.Status.PodIP, last, err)
	}
	return nil
}

// verifyPlacement checks, after scheduling, that every pod is on its node: same-node pods share node A, the
// cross-node and host servers are on node B.
func (r *Bench) verifyPlacement() {
	pl := r.objs.Placement
	want := map[Role]string{RoleClient: pl.ClientNode, RoleClientAgent: pl.ClientNode, RoleServerLocal: pl.ClientNode,
		RoleHostClient: pl.ClientNode, RoleServerRemote: pl.ServerNode, RoleHostServer: pl.ServerNode}
	for _, role := range []Role{RoleClient, RoleClientAgent, RoleServerLocal, RoleServerRemote, RoleHostClient, RoleHostServer} {
		p := r.pods[role]
		if p == nil {
			continue
		}
		r.report.Pods = append(r.report.Pods, PodPlacement{Role: role, Node: p.Spec.NodeName, IP: p.Status.PodIP, HostNetwork: p.Spec.HostNetwork})
		if p.Spec.NodeName != want[role] {
			r.broken[role] = fmt.Errorf("scheduled on %s, not on %s", p.Spec.NodeName, want[role])
			delete(r.pods, role)
		}
	}
	// Cross-node means different nodes, whatever the names say.
	if a, b := r.pods[RoleClient], r.pods[RoleServerRemote]; a != nil && b != nil && a.Spec.NodeName == b.Spec.NodeName {
		r.broken[RoleServerRemote] = fmt.Errorf("on the client's node %s: not a cross-node placement", a.Spec.NodeName)
		delete(r.pods, RoleServerRemote)
	}
	if a, b := r.pods[RoleHostClient], r.pods[RoleHostServer]; a != nil && b != nil && a.Spec.NodeName == b.Spec.NodeName {
		r.broken[RoleHostServer] = fmt.Errorf("on the host client's node %s: not a cross-node placement", a.Spec.NodeName)
		delete(r.pods, RoleHostServer)
	}
}

// waitServers waits until each server pod listens on its iperf3 (and netserver) port, read from /proc/net/tcp*
// without connecting (a stray connection can wedge an iperf3 3.12 server).
func (r *Bench) waitServers(ctx context.Context) {
	for _, role := range []Role{RoleServerLocal, RoleServerRemote, RoleHostServer} {
		if r.pods[role] == nil {
			continue
		}
		ports := podPorts
		if role == RoleHostServer {
			ports = hostPorts
		}
		want := []int{ports.Iperf3}
		if r.objs.RRTool == nettool.ToolNetperf {
			want = append(want, ports.Netserver)
		}
		var last string
		err := poll(r.d.Clock, 30*time.Second).Until(ctx, func(ctx context.Context) (bool, error) {
			out, err := r.execIn(ctx, role, containerIperf3, "cat", "/proc/net/tcp", "/proc/net/tcp6")
			if err != nil {
				last = err.Error()
				return false, nil
			}
			for _, p := range want {
				if !listening(out, p) {
					last = fmt.Sprintf("nothing listens on port %d", p)
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			r.broken[role] = fmt.Errorf("servers not listening (%s): %w", last, err)
			delete(r.pods, role)
		}
	}
}

// execIn runs a short command in a test pod.
func (r *Bench) execIn(ctx context.Context, role Role, container string, cmd ...string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	stdout, _, err := r.d.Exec.Exec(cctx, r.cfg.Namespace, string(role), container, cmd, nil)
	return string(stdout), err
}

// mtuFacts reads the MTU of eth0 in a pod on each node and, with the hostNetwork pods, of the node's
// default-route interface.
func (r *Bench) mtuFacts(ctx context.Context) {
	read := func(role Role, scope string, peer Role) {
		p := r.pods[role]
		if p == nil {
			return
		}
		container := containerNet
		if role == RoleServerRemote || role == RoleHostServer {
			container = containerIperf3
		}
		iface := "eth0"
		if scope == "node" {
			// The interface towards the other node (its hostNetwork pod IP is the node IP), else the default route.
			out, err := r.execIn(ctx, role, container, "cat", "/proc/net/route")
			iface = defaultRouteInterface(out)
			if q := r.pods[peer]; q != nil {
				if i := routeInterface(out, q.Status.PodIP); i != "" {
					iface = i
				}
			}
			if err != nil || !validInterfaceName(iface) {
				r.report.Notes = append(r.report.Notes, fmt.Sprintf("node MTU of %s not read: no route found (%v)", p.Spec.NodeName, err))
				return
			}
		}
		out, err := r.execIn(ctx, role, container, "cat", "/sys/class/net/"+iface+"/mtu")
		mtu, perr := parseMTU(out)
		if err != nil || perr != nil {
			r.report.Notes = append(r.report.Notes, fmt.Sprintf("MTU of %s in %s not read: %v", iface, role, errors.Join(err, perr)))
			return
		}
		r.report.Facts.MTU = append(r.report.Facts.MTU, MTUFact{Node: p.Spec.NodeName, Scope: scope, Interface: iface, MTU: mtu})
	}
	read(RoleClient, "pod", "")
	read(RoleServerRemote, "pod", "")
	read(RoleHostClient, "node", RoleHostServer)
	read(RoleHostServer, "node", RoleHostClient)
	if r.pods[RoleHostClient] == nil {
		r.report.Notes = append(r.report.Notes, "node interface MTU not measured: it is read from the hostNetwork pods of the host path")
	}
	for _, pod := range r.report.Facts.MTU {
		for _, node := range r.report.Facts.MTU {
			if pod.Scope == "pod" && node.Scope == "node" && pod.Node == node.Node && pod.MTU > node.MTU {
				r.report.Notes = append(r.report.Notes, fmt.Sprintf("pod MTU %d on %s exceeds the node interface MTU %d: expect fragmentation or drops",
					pod.MTU, pod.Node, node.MTU))
			}
		}
	}
}

// clusterFacts records the Kubernetes version, the nodes used and the CNI (best effort: facts never fail a run).
func (r *Bench) clusterFacts(ctx context.Context, nodes []corev1.Node, pl placement) {
	if v, err := r.d.Kube.Discovery().ServerVersion(); err == nil {
		r.report.Facts.KubernetesVersion = v.GitVersion
	}
	for i := range nodes {
		if nodes[i].Name == pl.ClientNode || nodes[i].Name == pl.ServerNode {
			r.report.Facts.Nodes = append(r.report.Facts.Nodes, nodeFacts(&nodes[i]))
		}
	}
	cctx, cancel := callCtx(ctx)
	defer cancel()
	var dss []appsv1.DaemonSet
	if l, err := r.d.Kube.AppsV1().DaemonSets(metav1.NamespaceAll).List(cctx, metav1.ListOptions{}); err == nil {
		dss = l.Items
	}
	r.report.Facts.CNI, r.report.Facts.CNISource = detectCNI(dss, nodes)
}

// pinNetworkImage records what the client pod's node resolved the network image to (its container status) and makes
// every later pod of the run use that digest: the servers, the hostNetwork pods and a --resume run the bits the
// client ran, even when the tag (the default's :latest) moves meanwhile.
func (r *Bench) pinNetworkImage(p *corev1.Pod) {
	ni := &results.NetworkImage{Ref: r.cfg.Images.Network}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == containerNet {
			ni.ImageID = cs.ImageID
		}
	}
	ni.Digest, ni.Pinned = pinImage(ni.Ref, ni.ImageID)
	if ni.Pinned != "" {
		r.objs.Images.Network = ni.Pinned
	} else {
		r.report.Notes = append(r.report.Notes, fmt.Sprintf("the network image %s was not pinned to a digest (the node reported image ID %q): "+
			"each test pod resolves the tag itself", ni.Ref, ni.ImageID))
	}
	r.report.NetworkImage = ni
	r.d.Log.Info("network image", "ref", ni.Ref, "imageID", ni.ImageID, "pinned", ni.Pinned)
}

// toolVersions asks the client pod's tools for their versions (a tool that is absent or does not answer stays "").
func (r *Bench) toolVersions(ctx context.Context) {
	ni := r.report.NetworkImage
	if out, err := r.execIn(ctx, RoleClient, containerNet, nettool.Iperf3VersionArgs...); err == nil {
		if v, err := nettool.ParseIperf3Version([]byte(out)); err == nil {
			ni.Iperf3 = v
		} else {
			r.d.Log.Warn("iperf3 version", "err", err)
		}
	}
	if out, err := r.execIn(ctx, RoleClient, containerNet, nettool.NetperfVersionArgs...); err == nil {
		if v, err := nettool.ParseNetperfVersion([]byte(out)); err == nil {
			ni.Netperf = v
		}
	}
}

// pinImage is ref's repository at the registry digest of imageID, a container status's imageID: digest
// "sha256:<hex>" and pinned "<repository>@sha256:<hex>" (a ref that names a digest is kept as it is). Both are "" when
// imageID holds no registry digest (a local image ID) or ref is no image reference (docs/cni.md). It is pure.
func pinImage(ref, imageID string) (digest, pinned string) {
	r, err := name.ParseReference(ref, name.WeakValidation)
	if err != nil {
		return "", ""
	}
	if d, ok := r.(name.Digest); ok {
		return d.DigestStr(), ref
	}
	id := strings.TrimPrefix(imageID, "docker-pullable://")
	if !strings.Contains(id, "@") {
		return "", ""
	}
	d, err := name.NewDigest(id, name.WeakValidation)
	if err != nil {
		return "", ""
	}
	return d.DigestStr(), r.Context().Name() + "@" + d.DigestStr()
}
