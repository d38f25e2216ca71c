package cgroupstat

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		dir     string
		version Version
		want    Stat
		err     string
	}{
		// v2: usage_usec 1.5 s; memory.current 50 MiB - inactive_file 10 MiB.
		{dir: "v2", version: V2, want: Stat{CPUNs: 1_500_000_000, MemBytes: 40 << 20}},
		// the working set is floored at 0 (cAdvisor)
		{dir: "v2-inactive-above", version: V2, want: Stat{CPUNs: 7000, MemBytes: 0}},
		// v1 co-mounted cpu,cpuacct; total_inactive_file (hierarchical), not inactive_file
		{dir: "v1", version: V1, want: Stat{CPUNs: 2_500_000_000, MemBytes: 80 << 20}},
		{dir: "v1-split", version: V1, want: Stat{CPUNs: 123, MemBytes: 1 << 20}},
		// hybrid: the cgroup2 mount under unified/ is not the root, the v1 controllers are read
		{dir: "hybrid", version: V1, want: Stat{CPUNs: 123, MemBytes: 1 << 20}},
		{dir: "none", err: "no cgroup found"},
		{dir: "v1-nostat", version: V1, err: "has no key total_inactive_file"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			r, err := Open(os.DirFS("testdata/" + tc.dir))
			if err == nil {
				if r.Version() != tc.version {
					t.Fatalf("version %d, want %d", r.Version(), tc.version)
				}
				var got Stat
				got, err = r.Read()
				if err == nil && got != tc.want {
					t.Fatalf("Read = %+v, want %+v", got, tc.want)
				}
			}
			if tc.err == "" && err != nil {
				t.Fatal(err)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
		})
	}
}

// TestReadThisMachine reads the cgroup this test runs in (v1 on the local cluster's nodes, v2 elsewhere).
func TestReadThisMachine(t *testing.T) {
	r, err := Open(os.DirFS("/sys/fs/cgroup"))
	if err != nil {
		t.Skipf("no readable cgroup here: %v", err)
	}
	a, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) {
	}
	b, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	if b.CPUNs <= a.CPUNs || b.MemBytes == 0 {
		t.Fatalf("cgroup v%d: cpu %d -> %d after a busy loop, memory %d", r.Version(), a.CPUNs, b.CPUNs, b.MemBytes)
	}
}

func TestSum(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(sec float64, cpuMs, memMiB uint64) Sample {
		return Sample{T: t0.Add(time.Duration(sec * float64(time.Second))), CPUNs: cpuMs * 1e6, MemBytes: memMiB << 20}
	}
	// a: 100 m, then 300 m (avg 200 m); memory 10, 20, 30 MiB.
	a := []Sample{at(0, 0, 10), at(1, 100, 20), at(2, 400, 30)}
	// b: out of phase by 0.3 s; 500 m then 100 m; memory 1 MiB.
	b := []Sample{at(0.3, 1000, 1), at(1.3, 1500, 1), at(2.3, 1600, 1)}
	fig := func(lo, avg, hi float64) Figure { return Figure{Min: lo, Avg: avg, Max: hi, HasMinMax: true} }
	for _, tc := range []struct {
		name         string
		series       [][]Sample
		since, until time.Time
		want         Summary
		err          string
	}{
		{name: "one container", series: [][]Sample{a}, since: t0, until: t0.Add(2 * time.Second),
			want: Summary{Samples: 3, CPUMillicores: fig(100, 200, 300), MemoryMiB: fig(10, 20, 30)}},
		// seconds 1 and 2 hold both series' rates: 100+500, 300+100; avg 200 + 300.
		{name: "two containers out of phase", series: [][]Sample{a, b}, since: t0, until: t0.Add(3 * time.Second),
			want: Summary{Samples: 6, CPUMillicores: fig(400, 500, 600), MemoryMiB: fig(11, 21, 31)}},
		// samples outside the window do not count: only the 300 m pair is inside
		{name: "window cuts", series: [][]Sample{a}, since: t0.Add(500 * time.Millisecond), until: t0.Add(2 * time.Second),
			want: Summary{Samples: 2, CPUMillicores: fig(300, 300, 300), MemoryMiB: fig(20, 25, 30)}},
		// a counter that went down (restarted cgroup) drops its pair, the rest stands
		{name: "counter reset", series: [][]Sample{{at(0, 500, 1), at(1, 100, 1), at(2, 300, 1)}}, since: t0, until: t0.Add(2 * time.Second),
			want: Summary{Samples: 3, CPUMillicores: fig(200, 200, 200), MemoryMiB: fig(1, 1, 1)}},
		// series without a shared second: averages, no min/max
		{name: "no shared second", series: [][]Sample{{at(0, 0, 1), at(1, 100, 1)}, {at(5, 0, 2), at(6, 200, 2)}}, since: t0, until: t0.Add(10 * time.Second),
			want: Summary{Samples: 4, CPUMillicores: Figure{Avg: 300}, MemoryMiB: Figure{Avg: 3}}},
		{name: "too few", series: [][]Sample{a}, since: t0.Add(1500 * time.Millisecond), until: t0.Add(time.Hour), err: "fewer than two"},
		{name: "none", err: "no cgroup series"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Sum(tc.series, tc.since, tc.until)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !close(got, tc.want) {
				t.Fatalf("Sum = %+v\nwant  %+v", got, tc.want)
			}
		})
	}
}

func close(a, b Summary) bool {
	eq := func(x, y Figure) bool {
		c := func(u, v float64) bool { return math.Abs(u-v) < 1e-9 }
		return x.HasMinMax == y.HasMinMax && c(x.Min, y.Min) && c(x.Avg, y.Avg) && c(x.Max, y.Max)
	}
	return a.Samples == b.Samples && eq(a.CPUMillicores, b.CPUMillicores) && eq(a.MemoryMiB, b.MemoryMiB)
}

func TestReadSamples(t *testing.T) {
	in := `{"t":"2026-01-02T03:04:05Z","cpuNs":10,"memBytes":20}
not json
{"t":"2026-01-02T03:04:06Z","cpuNs":30,"memBytes":40}
{"t":"2026-01-02T03:04:07Z","cpuNs":5`
	got, err := ReadSamples(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].CPUNs != 30 || got[1].MemBytes != 40 || got[0].T.Second() != 5 {
		t.Fatalf("ReadSamples = %+v, want the two whole lines", got)
	}
}
