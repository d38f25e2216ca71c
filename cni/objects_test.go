package cni

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"

	"github.com/meshbench/meshbench/internal/goldenfile"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/nettool"
)

func testObjects(tool nettool.Tool) objects {
	return objects{
		Images:    Images{Network: "meshbench.local/iperf3:dev", Agent: "meshbench.local/agent:dev", PullPolicy: "IfNotPresent"},
		Namespace: "mb-cni-test", RunID: "cni-test", RRTool: tool, Host: true, Remote: true, Service: true,
		Placement: placement{ClientNode: "node1", ServerNode: "node2"},
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got)
}

func TestObjectsGolden(t *testing.T) {
	t.Parallel()
	for _, tool := range []nettool.Tool{nettool.ToolBuiltin, nettool.ToolNetperf} {
		o := testObjects(tool)
		var buf bytes.Buffer
		objs := []any{o.namespaceObject()}
		objs = append(objs, o.clientPod())
		for _, r := range o.rolesAfterClient() {
			objs = append(objs, o.rolePod(r))
		}
		objs = append(objs, o.serviceObject())
		for _, obj := range objs {
			b, err := yaml.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			buf.WriteString("---\n")
			buf.Write(b)
		}
		golden(t, "objects-"+string(tool)+".yaml", buf.Bytes())
	}
}

// TestLeastPrivilege: hostNetwork only on the host pods; every container non-root, no capabilities, no escalation.
func TestLeastPrivilege(t *testing.T) {
	t.Parallel()
	o := testObjects(nettool.ToolBuiltin)
	roles := append([]Role{RoleClient}, o.rolesAfterClient()...)
	if !slices.Equal(roles, []Role{RoleClient, RoleClientAgent, RoleServerLocal, RoleServerRemote, RoleHostClient, RoleHostServer}) {
		t.Fatalf("roles %v", roles)
	}
	for _, r := range roles {
		p := o.rolePod(r)
		if p.Name != string(r) || p.Labels[kube.RunLabel] != "cni-test" || p.Labels[componentLabel] != componentValue || p.Labels[roleLabel] != string(r) {
			t.Errorf("%s: name/labels %s %v", r, p.Name, p.Labels)
		}
		wantHost := r == RoleHostClient || r == RoleHostServer
		if p.Spec.HostNetwork != wantHost {
			t.Errorf("%s: hostNetwork %v", r, p.Spec.HostNetwork)
		}
		ps := p.Spec.SecurityContext
		if ps == nil || !*ps.RunAsNonRoot || *ps.RunAsUser == 0 || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: pod security context %+v", r, ps)
		}
		if *p.Spec.AutomountServiceAccountToken || p.Spec.HostPID || p.Spec.HostIPC {
			t.Errorf("%s: token or host namespaces", r)
		}
		wantNode := "node1"
		if r == RoleServerRemote || r == RoleHostServer {
			wantNode = "node2"
		}
		if got := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values; !slices.Equal(got, []string{wantNode}) {
			t.Errorf("%s: pinned to %v", r, got)
		}
		for _, c := range p.Spec.Containers {
			sc := c.SecurityContext
			if sc == nil || *sc.AllowPrivilegeEscalation || *sc.Privileged || !*sc.ReadOnlyRootFilesystem || !*sc.RunAsNonRoot ||
				!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
				t.Errorf("%s/%s: security context %+v", r, c.Name, sc)
			}
			if _, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
				t.Errorf("%s/%s: a CPU limit throttles the benchmark", r, c.Name)
			}
		}
	}
	svc := o.serviceObject()
	if svc.Spec.Selector[roleLabel] != string(RoleServerRemote) || svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("service %+v", svc.Spec)
	}
	noRR := testObjects("")
	if slices.Contains(noRR.rolesAfterClient(), RoleClientAgent) || len(noRR.rolePod(RoleServerLocal).Spec.Containers) != 1 {
		t.Error("without rr/crr tests the servers should run iperf3 only")
	}
}

// TestCgroupsWrapper: every test container runs under `meshbench-agent cgroups`, network-image containers with the
// init container's copy of the agent, agent-image ones with their own.
func TestCgroupsWrapper(t *testing.T) {
	t.Parallel()
	o := testObjects(nettool.ToolBuiltin)
	for _, r := range append([]Role{RoleClient}, o.rolesAfterClient()...) {
		p := o.rolePod(r)
		copied := false
		for _, c := range p.Spec.Containers {
			want := []string{nettool.AgentBinary, "cgroups", "--name", c.Name, "--dir", cgroupsDir, "--"}
			if c.Image == o.Images.Network {
				want[0], copied = copiedAgent, true
			}
			if len(c.Command) <= len(want) || !slices.Equal(c.Command[:len(want)], want) {
				t.Errorf("%s/%s: command %q does not start with %q", r, c.Name, c.Command, want)
			}
			if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == meshbenchDir }) {
				t.Errorf("%s/%s: %s not mounted", r, c.Name, meshbenchDir)
			}
		}
		hasInit := len(p.Spec.InitContainers) == 1 && p.Spec.InitContainers[0].Image == o.Images.Agent
		if hasInit != copied || (!copied && len(p.Spec.InitContainers) != 0) {
			t.Errorf("%s: init containers %v, network-image containers %v", r, p.Spec.InitContainers, copied)
		}
	}
	if len(o.rolePod(RoleClientAgent).Spec.InitContainers) != 0 {
		t.Error("client-agent runs the agent image only: no copy needed")
	}
}
