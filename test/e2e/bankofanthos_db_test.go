//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/workloads"
)

// pgBin is where Debian's PostgreSQL lives in the harness's postgres image (hack/localcluster/postgres-image.sh).
const pgBin = "/usr/lib/postgresql/15/bin/"

// TestBankOfAnthosDatabasesStart runs meshbench's accounts-db and ledger-db StatefulSets exactly as workloads
// generates them for a single-namespace topology, with only the image replaced: upstream's (postgres:16-alpine plus
// init scripts, not pullable here) by the harness's postgres image, which keeps the official entrypoint's contract
// (starts as root, chowns PGDATA, drops to postgres, initdb from POSTGRES_*). It proves initdb succeeded on the
// subPath directory the kubelet creates root-owned, and that the databases accept the connections the services
// make (ACCOUNTS_DB_URI, SPRING_DATASOURCE_*) with their passwords, through their Services.
// With the securityContext meshbench used to give them (runAsUser 1000, runAsNonRoot) both crash-looped.
func TestBankOfAnthosDatabasesStart(t *testing.T) {
	c := RequireCluster(t)
	image := c.Image(t, "POSTGRES")
	cl := wlClients(t, c)
	ns := c.CreateNamespace(t, "e2e-boadb")

	s := &scenario.Scenario{APIVersion: scenario.APIVersion, Kind: scenario.Kind, Metadata: scenario.Metadata{Name: "e2e-boadb"},
		Spec: scenario.Spec{Workload: scenario.Workload{
			App: scenario.AppBankOfAnthos, Topologies: []scenario.Topology{{Kind: scenario.TopologySingle}},
		}}}
	setDefaults(s)
	if ps := scenario.Validate(s); len(ps) > 0 {
		t.Fatalf("scenario: %v", ps)
	}
	objs, _, err := workloads.Objects(s, s.Spec.Workload.Topologies[0], c.RunID)
	if err != nil {
		t.Fatal(err)
	}

	// What the databases need: their ConfigMaps, Services and StatefulSets, moved into the test's namespace, the
	// StatefulSets' image swapped and nothing else touched.
	cms := map[string]map[string]string{}
	var apply []runtime.Object
	sets := map[string]*appsv1.StatefulSet{}
	for _, o := range objs {
		switch v := o.(type) {
		case *corev1.ConfigMap:
			cms[v.Name] = v.Data
			v.Namespace = ns
			apply = append(apply, v)
		case *corev1.Service:
			if v.Name == workloads.BoAAccountsDB || v.Name == workloads.BoALedgerDB {
				v.Namespace = ns
				apply = append(apply, v)
			}
		case *appsv1.StatefulSet:
			if sc := v.Spec.Template.Spec.SecurityContext; sc != nil {
				t.Fatalf("StatefulSet %s has a pod securityContext %+v: upstream's has none (the entrypoint must start as root)", v.Name, sc)
			}
			if len(v.Spec.Template.Spec.Containers) != 1 {
				t.Fatalf("StatefulSet %s: %d containers, want 1", v.Name, len(v.Spec.Template.Spec.Containers))
			}
			v.Namespace = ns
			v.Spec.Template.Spec.Containers[0].Image = image
			sets[v.Name] = v
			apply = append(apply, v)
		}
	}
	if len(sets) != 2 {
		t.Fatalf("StatefulSets %v, want accounts-db and ledger-db", sets)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ap := kube.Applier{Dynamic: cl.Dynamic, Mapper: cl.Mapper}
	for _, o := range apply {
		if _, err := ap.Apply(ctx, o); err != nil {
			t.Fatalf("apply: %v", err)
		}
	}

	accounts, ledger := cms["accounts-db-config"], cms["ledger-db-config"]
	dbs := []struct {
		set, user, password, db string
		uri                     string // how the services connect (through the Service)
	}{
		{workloads.BoAAccountsDB, accounts["POSTGRES_USER"], accounts["POSTGRES_PASSWORD"], accounts["POSTGRES_DB"], accounts["ACCOUNTS_DB_URI"]},
		{workloads.BoALedgerDB, ledger["POSTGRES_USER"], ledger["POSTGRES_PASSWORD"], ledger["POSTGRES_DB"],
			// balancereader & co. use jdbc:postgresql://ledger-db:5432/postgresdb with SPRING_DATASOURCE_USERNAME/PASSWORD
			fmt.Sprintf("postgresql://%s:%s@%s/%s", ledger["SPRING_DATASOURCE_USERNAME"], ledger["SPRING_DATASOURCE_PASSWORD"],
				strings.TrimSuffix(strings.TrimPrefix(ledger["SPRING_DATASOURCE_URL"], "jdbc:postgresql://"), "/"+ledger["POSTGRES_DB"]), ledger["POSTGRES_DB"])},
	}
	for _, db := range dbs {
		t.Run(db.set, func(t *testing.T) {
			ss := sets[db.set]
			container := ss.Spec.Template.Spec.Containers[0].Name
			pod := db.set + "-0"
			start := time.Now()
			if _, err := c.WaitPodsReady(ctx, ns, "app="+db.set, 1); err != nil {
				t.Fatalf("pod %s not ready: %v", pod, err)
			}
			// No readiness probe (as upstream): Ready means the container runs. Postgres accepts connections once
			// initdb, the init scripts and the temporary server are done.
			var last string
			err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
				out, stderr, err := c.Exec(ctx, ns, pod, container, pgBin+"pg_isready", "-h", "127.0.0.1", "-p", "5432")
				last = strings.TrimSpace(out + stderr)
				if err == nil {
					return true, nil
				}
				return false, nil
			})
			if err != nil {
				t.Fatalf("postgres in %s never accepted connections: %v (last pg_isready: %s)", pod, err, last)
			}
			t.Logf("%s accepts connections %s after apply", pod, time.Since(start).Round(time.Second))

			// initdb ran on the kubelet's subPath directory, which the entrypoint handed to postgres.
			out, _, err := c.Exec(ctx, ns, pod, container, "sh", "-c", "cat $PGDATA/PG_VERSION; stat -c %U $PGDATA; grep ^Uid: /proc/1/status")
			if err != nil {
				t.Fatal(err)
			}
			f := strings.Fields(out)
			if len(f) < 4 || f[0] != "15" || f[1] != "postgres" || f[3] != "70" {
				t.Errorf("PG_VERSION, PGDATA owner, server uid = %q; want 15, postgres, Uid 70 (initdb done, privileges dropped)", out)
			}

			// The service's connection: TCP through the Service, password authentication (scram-sha-256).
			out, stderr, err := c.Exec(ctx, ns, pod, container, pgBin+"psql", db.uri, "-Atc", "select current_user, current_database(), 1")
			if err != nil {
				t.Fatalf("connect as the services do (%s): %v %s", db.uri, err, stderr)
			}
			if want := db.user + "|" + db.db + "|1"; strings.TrimSpace(out) != want {
				t.Errorf("select through %s = %q, want %q", db.uri, out, want)
			}
			wrong := strings.Replace(db.uri, ":"+db.password+"@", ":not-"+db.password+"@", 1)
			if _, _, err := c.Exec(ctx, ns, pod, container, pgBin+"psql", wrong, "-Atc", "select 1"); err == nil {
				t.Errorf("a wrong password was accepted over TCP: pg_hba.conf lacks the entrypoint's password rule")
			}

			// It started once: no crash loop.
			p, err := c.Client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.RestartCount != 0 {
					t.Errorf("container %s restarted %d times", cs.Name, cs.RestartCount)
				}
			}
		})
	}
}
