package cni

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/nettool"
)

// Labels of the run's objects (besides kube.RunLabels).
const (
	componentLabel = "meshbench.dev/component"
	componentValue = "cni-test"
	roleLabel      = "meshbench.dev/role"
)

// Role is one test pod.
type Role string

// Roles; the pod is named after its role.
const (
	RoleClient       Role = "client"        // node A, pod network: iperf3/netperf clients (network image)
	RoleClientAgent  Role = "client-agent"  // node A, pod network: built-in RR/CRR client (agent image)
	RoleServerLocal  Role = "server-local"  // node A, pod network
	RoleServerRemote Role = "server-remote" // node B, pod network; the Service's only backend
	RoleHostClient   Role = "host-client"   // node A, hostNetwork
	RoleHostServer   Role = "host-server"   // node B, hostNetwork
)

// serviceName is the ClusterIP Service in front of server-remote.
const serviceName = "server-remote"

// Container names.
const (
	containerNet       = "net"       // network image, idle: iperf3/netperf clients are exec'd into it
	containerAgent     = "agent"     // agent image, idle: built-in rr/crr are exec'd into it
	containerIperf3    = "iperf3"    // iperf3 -s
	containerEcho      = "echo"      // meshbench-agent serve (TCP echo for the built-in RR/CRR)
	containerNetserver = "netserver" // netserver -D
	// containerInstallAgent is the init container that copies the agent binary into the pod's meshbench volume,
	// for the cgroups wrapper of the network image's containers.
	containerInstallAgent = "install-agent"
)

// The pod's meshbench volume (an emptyDir mounted in every container): the agent binary the init container copies
// and the cgroups wrapper's sample files, one per container (see internal/cgroupstat).
const (
	volumeMeshbench = "meshbench"
	meshbenchDir    = "/meshbench"
	copiedAgent     = meshbenchDir + "/bin/" + nettool.AgentBinary
	cgroupsDir      = meshbenchDir + "/cgroups"
)

// ports are the server ports of one network namespace.
type ports struct {
	Iperf3      int `json:"iperf3"`
	Echo        int `json:"echo"`
	EchoHTTP    int `json:"echoHTTP"` // the agent's HTTP echo, which `serve` always opens
	Netserver   int `json:"netserver"`
	NetperfData int `json:"netperfData"`
}

// podPorts are used in pod network namespaces (the tools' defaults); hostPorts on hostNetwork pods, where the
// defaults may already be taken on the node.
var (
	podPorts  = ports{Iperf3: nettool.DefaultIperf3Port, Echo: nettool.DefaultEchoPort, EchoHTTP: 8080, Netserver: nettool.DefaultNetserverPort, NetperfData: nettool.DefaultNetperfDataPort}
	hostPorts = ports{Iperf3: 25201, Echo: 28078, EchoHTTP: 28080, Netserver: 24444, NetperfData: 24445}
)

// nonRootUID runs every container (the images' files are world-readable; nothing needs root).
const nonRootUID = 65532

// objects is what the run deploys besides the namespace.
type objects struct {
	Images    Images
	Namespace string
	RunID     string
	Placement placement
	// RRTool decides whether the servers get the agent's echo or netserver, and whether client-agent exists; ""
	// when no rr/crr test runs.
	RRTool nettool.Tool
	// Host adds the hostNetwork pods (only when the host path runs).
	Host bool
	// Remote adds server-remote (cross-node or service path) and Service adds the ClusterIP Service.
	Remote, Service bool
}

// Images are the container images and pull policy.
type Images struct {
	Network    string `json:"network"`
	Agent      string `json:"agent"`
	PullPolicy string `json:"pullPolicy"`
}

// labels for an object of the run.
func (o objects) labels(role Role) map[string]string {
	l := kube.MergeLabels(kube.RunLabels(o.RunID), map[string]string{componentLabel: componentValue})
	if role != "" {
		l[roleLabel] = string(role)
	}
	return l
}

// namespaceObject is the run namespace.
func (o objects) namespaceObject() *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Namespace, Labels: o.labels("")},
	}
}

// clientPod is the first pod: it also tells which RR tool the network image has.
func (o objects) clientPod() *corev1.Pod {
	return o.pod(RoleClient, o.Placement.ClientNode, false, o.netContainer())
}

// rolesAfterClient are the pods deployed once the RR tool is known, in a stable order.
func (o objects) rolesAfterClient() []Role {
	var rs []Role
	if o.RRTool == nettool.ToolBuiltin {
		rs = append(rs, RoleClientAgent)
	}
	rs = append(rs, RoleServerLocal)
	if o.Remote || o.Service {
		rs = append(rs, RoleServerRemote)
	}
	if o.Host {
		rs = append(rs, RoleHostClient, RoleHostServer)
	}
	return rs
}

// rolePod builds the pod of a role.
func (o objects) rolePod(r Role) *corev1.Pod {
	switch r {
	case RoleClient:
		return o.clientPod()
	case RoleClientAgent:
		return o.pod(r, o.Placement.ClientNode, false, o.agentIdleContainer())
	case RoleServerLocal:
		return o.pod(r, o.Placement.ClientNode, false, o.serverContainers(podPorts)...)
	case RoleServerRemote:
		return o.pod(r, o.Placement.ServerNode, false, o.serverContainers(podPorts)...)
	case RoleHostClient:
		cs := []corev1.Container{o.netContainer()}
		if o.RRTool == nettool.ToolBuiltin {
			cs = append(cs, o.agentIdleContainer())
		}
		return o.pod(r, o.Placement.ClientNode, true, cs...)
	case RoleHostServer:
		return o.pod(r, o.Placement.ServerNode, true, o.serverContainers(hostPorts)...)
	}
	return nil
}

// serviceObject is the ClusterIP Service whose only backend is server-remote.
func (o objects) serviceObject() *corev1.Service {
	p := podPorts
	port := func(name string, n int, proto corev1.Protocol) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Port: int32(n), TargetPort: intstr.FromInt32(int32(n)), Protocol: proto}
	}
	ports := []corev1.ServicePort{port("iperf3-tcp", p.Iperf3, corev1.ProtocolTCP), port("iperf3-udp", p.Iperf3, corev1.ProtocolUDP)}
	switch o.RRTool {
	case nettool.ToolNetperf:
		ports = append(ports, port("netperf-control", p.Netserver, corev1.ProtocolTCP), port("netperf-data", p.NetperfData, corev1.ProtocolTCP))
	case nettool.ToolBuiltin:
		ports = append(ports, port("echo", p.Echo, corev1.ProtocolTCP))
	}
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: serviceName, Namespace: o.Namespace, Labels: o.labels("")},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{kube.RunLabel: o.RunID, roleLabel: string(RoleServerRemote)},
			Ports:    ports,
		},
	}
}

// agentIn is the agent binary a container of the pod runs its cgroups wrapper (and `cgroups dump`) with: its own
// when it runs the agent image, the init container's copy otherwise.
func (o objects) agentIn(c corev1.Container) string {
	if c.Image == o.Images.Agent {
		return nettool.AgentBinary
	}
	return copiedAgent
}

// wrapCgroups runs a container's command under `meshbench-agent cgroups`, which samples the container's cgroup
// every second into cgroupsDir (the resource source of cases too short for Prometheus rates). It reports whether
// the container needs the init container's copy of the agent.
func (o objects) wrapCgroups(c *corev1.Container) bool {
	agent := o.agentIn(*c)
	c.Command = append([]string{agent, "cgroups", "--name", c.Name, "--dir", cgroupsDir, "--"}, c.Command...)
	return agent == copiedAgent
}

func (o objects) pod(r Role, node string, hostNetwork bool, cs ...corev1.Container) *corev1.Pod {
	var inits []corev1.Container
	needCopy := false
	for i := range cs {
		needCopy = o.wrapCgroups(&cs[i]) || needCopy
	}
	if needCopy {
		inits = append(inits, corev1.Container{Name: containerInstallAgent, Image: o.Images.Agent,
			Command: []string{nettool.AgentBinary, "cgroups", "install", "--to", meshbenchDir + "/bin"}})
	}
	o.common(inits)
	o.common(cs)
	grace := int64(2)
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: string(r), Namespace: o.Namespace, Labels: o.labels(r)},
		Spec: corev1.PodSpec{
			InitContainers:                inits,
			Containers:                    cs,
			RestartPolicy:                 corev1.RestartPolicyNever, // a crashed server must show, not restart silently
			HostNetwork:                   hostNetwork,
			AutomountServiceAccountToken:  ptrTo(false),
			EnableServiceLinks:            ptrTo(false),
			TerminationGracePeriodSeconds: &grace,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptrTo(true),
				RunAsUser:      ptrTo(int64(nonRootUID)),
				RunAsGroup:     ptrTo(int64(nonRootUID)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
				}}},
			}},
			Volumes: []corev1.Volume{
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: volumeMeshbench, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
}

// common sets what every container of a test pod shares: least privilege, pull policy, the volumes, requests.
func (o objects) common(cs []corev1.Container) {
	for i := range cs {
		cs[i].SecurityContext = containerSecurity()
		cs[i].ImagePullPolicy = corev1.PullPolicy(o.Images.PullPolicy)
		cs[i].VolumeMounts = []corev1.VolumeMount{
			{Name: "tmp", MountPath: "/tmp"}, // iperf3 < 3.14 mmaps its buffers from a /tmp file
			{Name: volumeMeshbench, MountPath: meshbenchDir},
		}
		cs[i].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi"),
		}} // no limits: a throttled client measures its quota, not the network
		cs[i].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	}
}

func containerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptrTo(false),
		Privileged:               ptrTo(false),
		ReadOnlyRootFilesystem:   ptrTo(true),
		RunAsNonRoot:             ptrTo(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// idleForever keeps a tools container alive without depending on `sleep infinity` support (busybox, coreutils).
var idleForever = []string{"sleep", "2147483647"}

func (o objects) netContainer() corev1.Container {
	return corev1.Container{Name: containerNet, Image: o.Images.Network, Command: idleForever}
}

func (o objects) agentIdleContainer() corev1.Container {
	// `rr --hold` waits for SIGTERM: a clean, fast shutdown, and proof the image has the rr subcommand.
	return corev1.Container{Name: containerAgent, Image: o.Images.Agent, Command: []string{nettool.AgentBinary, "rr", "--hold"}}
}

func (o objects) serverContainers(p ports) []corev1.Container {
	cs := []corev1.Container{{
		Name: containerIperf3, Image: o.Images.Network,
		// -J: clients asking --get-server-output receive the server's JSON view (which address it saw).
		Command: []string{"iperf3", "-s", "-p", strconv.Itoa(p.Iperf3), "-J"},
		Ports: []corev1.ContainerPort{
			{Name: "iperf3-tcp", ContainerPort: int32(p.Iperf3), Protocol: corev1.ProtocolTCP},
			{Name: "iperf3-udp", ContainerPort: int32(p.Iperf3), Protocol: corev1.ProtocolUDP},
		},
	}}
	switch o.RRTool {
	case "": // no rr/crr test: the servers need only iperf3
	case nettool.ToolNetperf:
		cs = append(cs, corev1.Container{
			Name: containerNetserver, Image: o.Images.Network,
			Command: []string{"netserver", "-D", "-p", strconv.Itoa(p.Netserver)},
			Ports: []corev1.ContainerPort{{Name: "netperf-control", ContainerPort: int32(p.Netserver)},
				{Name: "netperf-data", ContainerPort: int32(p.NetperfData)}},
		})
	case nettool.ToolBuiltin:
		cs = append(cs, corev1.Container{
			Name: containerEcho, Image: o.Images.Agent,
			Command: []string{nettool.AgentBinary, "serve", "--tcp-port", strconv.Itoa(p.Echo), "--udp-port", "",
				"--http-port", strconv.Itoa(p.EchoHTTP)},
			Ports: []corev1.ContainerPort{{Name: "echo", ContainerPort: int32(p.Echo)}},
			// The echo server answers any connection: a TCP probe is harmless (unlike on iperf3, which a stray
			// connection can wedge).
			ReadinessProbe: &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(p.Echo))}},
				PeriodSeconds: 1, FailureThreshold: 30,
			},
		})
	}
	return cs
}

func ptrTo[T any](v T) *T { return &v }
