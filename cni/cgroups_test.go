package cni

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/internal/cgroupstat"
	"github.com/meshbench/meshbench/results"
)

func TestCgroupSamples(t *testing.T) {
	t.Parallel()
	w := results.Window{Kind: results.WindowTest, Start: time.Unix(0, 0), End: time.Unix(10, 0)}
	full := cgroupstat.Summary{CPUMillicores: cgroupstat.Figure{Min: 1, Avg: 2, Max: 3, HasMinMax: true}, MemoryMiB: cgroupstat.Figure{Min: 4, Avg: 5, Max: 6, HasMinMax: true}}
	got := cgroupSamples(w, full, map[string]string{labelPath: "host"})
	var keys []string
	for _, s := range got {
		if s.Source != results.CNISourceCgroup || s.Labels[results.CNILabelSource] != results.CNISourceCgroup || s.Labels[labelPath] != "host" || s.Component != results.ComponentCNITest {
			t.Errorf("sample %+v", s)
		}
		keys = append(keys, string(s.Metric)+"/"+string(s.Stat)+"/"+string(s.Unit))
	}
	if want := "cpu/min/millicores cpu/max/millicores cpu/avg/millicores memory/min/MiB memory/max/MiB memory/avg/MiB"; strings.Join(keys, " ") != want {
		t.Fatalf("samples %q, want %q", keys, want)
	}
	// series without a shared second: the averages only
	avgOnly := cgroupstat.Summary{CPUMillicores: cgroupstat.Figure{Avg: 2}, MemoryMiB: cgroupstat.Figure{Avg: 5}}
	if got := cgroupSamples(w, avgOnly, map[string]string{}); len(got) != 2 || got[0].Stat != "avg" || got[1].Stat != "avg" || got[0].Value != 2 {
		t.Fatalf("avg-only samples %+v", got)
	}
}

// An init container that failed (an agent image without `cgroups install`) breaks the pod with its reason; one
// that completed does not.
func TestPodBrokenInitContainer(t *testing.T) {
	t.Parallel()
	p := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{{
		Name: containerInstallAgent, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: "unknown subcommand \"cgroups\""}},
	}}}}
	if got := podBroken(p); !strings.Contains(got, "init container install-agent exited (Error, code 2): unknown subcommand") {
		t.Fatalf("podBroken = %q", got)
	}
	p.Status.InitContainerStatuses[0].State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}
	if got := podBroken(p); got != "" {
		t.Fatalf("podBroken = %q for a completed init container", got)
	}
}
