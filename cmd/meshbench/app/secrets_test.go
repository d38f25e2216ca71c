package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue 15 section 3: the Prometheus bearer token, basic-auth passwords and kubeconfig credentials (a token, a
// client key, an exec plugin's environment, a basic-auth password) never appear in anything meshbench writes or
// prints. TestPlantedSecretsNeverLeak plants distinctive strings in each, runs the cluster verbs against a stand-in
// API server and Prometheus that check the credentials arrived (so the secrets were really in use), then greps
// every file written and all stdout and stderr (at -v -v, with client-go's debug logs) for them.

// headerLog records the Authorization headers a stand-in received.
type headerLog struct {
	mu   sync.Mutex
	auth []string
}

func (h *headerLog) add(r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.auth = append(h.auth, r.Header.Get("Authorization"))
}

func (h *headerLog) saw(prefix string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range h.auth {
		if strings.HasPrefix(a, prefix) {
			return true
		}
	}
	return false
}

// standInAPIServer answers /version and refuses everything else with 403 Forbidden, as an API server does for a user
// without permissions; it asks for (does not require) a client certificate.
func standInAPIServer(t *testing.T, h *headerLog) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.add(r)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/version" {
			_, _ = io.WriteString(w, `{"major":"1","minor":"37","gitVersion":"v1.37.2"}`)
			return
		}
		w.WriteHeader(http.StatusForbidden)
		_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"forbidden: %s","reason":"Forbidden","code":403}`, r.URL.Path)
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// standInPrometheus serves an empty query API behind a self-signed certificate (reached with insecureSkipVerify).
func standInPrometheus(t *testing.T, h *headerLog) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.add(r)
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/status/config") {
			_, _ = io.WriteString(w, `{"status":"success","data":{"yaml":"global:\n  scrape_interval: 15s\n"}}`)
			return
		}
		_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// clientCert is a self-signed client certificate and its key, PEM.
func clientCert(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func TestPlantedSecretsNeverLeak(t *testing.T) {
	const (
		promToken  = "planted-prom-token-5b1e7d"
		kubeToken  = "planted-kube-token-91c4aa"
		execEnv    = "planted-exec-env-3f08c2"
		basicPW    = "planted-basic-pw-c7d2e9"
		pushPW     = "planted-push-pw-e4a613"
		execPrefix = "exec-"
	)
	dir := t.TempDir()
	apiLog, promLog := &headerLog{}, &headerLog{}
	api, prom := standInAPIServer(t, apiLog), standInPrometheus(t, promLog)
	certPEM, keyPEM := clientCert(t)
	keyB64 := base64.StdEncoding.EncodeToString(keyPEM)
	// The key's own base64 body (the PEM lines) and its kubeconfig encoding (past the PEM header, which every key
	// shares) are both planted strings.
	keyBody := strings.Split(string(keyPEM), "\n")[1]

	tokenFile := filepath.Join(dir, "prom-token")
	writeFile(t, tokenFile, promToken+"\n")
	plugin := filepath.Join(dir, "credential-plugin")
	writeFile(t, plugin, "#!/bin/sh\nprintf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%s\"}}' \""+execPrefix+"$MB_PLANTED\"\n")
	if err := os.Chmod(plugin, 0o700); err != nil {
		t.Fatal(err)
	}
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw}))
	kc := filepath.Join(dir, "kubeconfig")
	writeFile(t, kc, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, certificate-authority-data: %s}}]
users:
- {name: token, user: {token: %s, client-certificate-data: %s, client-key-data: %s}}
- name: exec
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: %s
      env: [{name: MB_PLANTED, value: %s}]
      interactiveMode: Never
- {name: basic, user: {username: bench, password: %s}}
contexts:
- {name: token, context: {cluster: c, user: token}}
- {name: exec, context: {cluster: c, user: exec}}
- {name: basic, context: {cluster: c, user: basic}}
current-context: token
`, api.URL, ca, kubeToken, base64.StdEncoding.EncodeToString(certPEM), keyB64, plugin, execEnv, basicPW))
	scn := filepath.Join(dir, "scenario.yaml")
	writeFile(t, scn, fmt.Sprintf(`apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: planted}
spec:
  profile: localcluster
  workload: {app: fortio-chain, chain: {depth: 1, fanOut: 1}, replicas: 1}
  modes: [none]
  load: {qps: [10], connections: 1, warmUp: 1s}
  windows: {idle: 4s, load: 4s, repetitions: 1, settle: 1s}
  prometheus: {url: %q, bearerTokenFile: %s, insecureSkipVerify: true, scrapeInterval: 1s}
  cni: {duration: 5s, samples: 1, udpBitrate: "1G"}
`, prom.URL, tokenFile))
	out := filepath.Join(dir, "runs")

	// printed is everything the verbs wrote to stdout and stderr (the grep's subject); transcript adds the command
	// lines, which hold the push URL's planted password themselves, for failure messages.
	var printed, transcript strings.Builder
	do := func(args ...string) int {
		code, stdout, stderr := run(t, args...)
		fmt.Fprintf(&printed, "%s\n%s\n", stdout, stderr)
		fmt.Fprintf(&transcript, "$ %v (exit %d)\n%s\n%s\n", args[:min(len(args), 3)], code, stdout, stderr)
		return code
	}
	for _, ctx := range []string{"token", "exec", "basic"} {
		cluster := []string{"--kubeconfig", kc, "--context", ctx, "-v", "-v"}
		do(append([]string{"run", "-f", scn, "--output-dir", out, "--skip-image-check"}, cluster...)...)
		// Images are looked up on loopback only (a port nothing listens on).
		do(append([]string{"preflight", "-f", scn, "--image-registry", "127.0.0.1:1/meshbench"}, cluster...)...)
		do(append([]string{"cni", "-f", scn, "--output-dir", filepath.Join(dir, "cni"), "--skip-image-check"}, cluster...)...)
		do(append([]string{"cleanup", "--all", "--output-dir", out, "--timeout", "2s"}, cluster...)...)
	}
	runs, _ := filepath.Glob(filepath.Join(out, "*", "run.json"))
	if len(runs) != 3 {
		t.Fatalf("%d run directories with run.json, want one per context (the secrets must reach the writing of results):\n%s", len(runs), transcript.String())
	}
	if cni, _ := filepath.Glob(filepath.Join(dir, "cni", "*", "run.json")); len(cni) != 3 {
		t.Errorf("%d cni run directories, want one per context:\n%s", len(cni), transcript.String())
	}
	pg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadRequest) }))
	t.Cleanup(pg.Close)
	pushURL := strings.Replace(pg.URL, "http://", "http://bench:"+pushPW+"@", 1)
	do("report", filepath.Dir(runs[0]), "--push", pushURL, "-v", "-v")
	do("report", filepath.Dir(runs[1]), "-v", "-v")
	code, manifests, stderr := run(t, "schedule", "-f", scn, "--pvc", "runs", "--prometheus-secret", "meshbench-prometheus")
	fmt.Fprintf(&printed, "%s\n%s\n", manifests, stderr)
	if code != exitOK {
		t.Fatalf("schedule: exit %d\n%s", code, stderr)
	}
	// The token is referenced from the Secret, never inlined, and the local file is not named.
	if !strings.Contains(manifests, "secretName: meshbench-prometheus") || strings.Contains(manifests, tokenFile) {
		t.Errorf("schedule: want the token referenced from Secret meshbench-prometheus and the local file %s unnamed:\n%s", tokenFile, manifests)
	}
	do("schedule", "-f", scn, "--pvc", "runs", "--push", pushURL) // refused: no Secret, credentials in the URL

	// The secrets were in use: each credential reached the stand-in that checks it.
	for _, want := range []struct {
		log    *headerLog
		prefix string
	}{
		{apiLog, "Bearer " + kubeToken}, {apiLog, "Bearer " + execPrefix + execEnv}, {apiLog, "Basic "}, {promLog, "Bearer " + promToken},
	} {
		if !want.log.saw(want.prefix) {
			t.Errorf("no request carried %q: the planted credential was not used", want.prefix)
		}
	}
	planted := []string{promToken, kubeToken, execEnv, basicPW, pushPW, keyB64[64:128], keyBody}
	check := func(where, text string) {
		for _, p := range planted {
			if strings.Contains(text, p) {
				i := strings.Index(text, p)
				t.Errorf("%s contains the planted secret %q: ...%s...", where, p, text[max(0, i-120):min(len(text), i+len(p)+40)])
			}
		}
	}
	check("stdout/stderr", printed.String())
	files := 0
	walk := func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		check(p, string(b))
		return nil
	}
	for _, d := range []string{out, filepath.Join(dir, "cni")} {
		if _, err := os.Stat(d); os.IsNotExist(err) {
			continue
		}
		if err := filepath.WalkDir(d, walk); err != nil {
			t.Fatal(err)
		}
	}
	if files < 9 {
		t.Errorf("only %d files written under %s: the runs did not get far enough to prove anything", files, out)
	}
	for _, want := range []string{"run.json", "cases.jsonl", "summary.json", "report.md", "report.html"} {
		if m, _ := filepath.Glob(filepath.Join(out, "*", want)); len(m) == 0 {
			if m, _ = filepath.Glob(filepath.Join(out, "*", "report", want)); len(m) == 0 {
				t.Errorf("no %s written: the grep would not cover it", want)
			}
		}
	}
	// run.json records the turned-off verification; the run warned about it.
	for _, r := range runs {
		b, _ := os.ReadFile(r)
		var meta struct{ Insecure []string }
		if err := json.Unmarshal(b, &meta); err != nil || len(meta.Insecure) != 1 || meta.Insecure[0] != "prometheus" {
			t.Errorf("%s: insecure %q (%v), want [prometheus]", r, meta.Insecure, err)
		}
	}
	if md, _ := os.ReadFile(filepath.Join(filepath.Dir(runs[0]), "report", "report.md")); !strings.Contains(string(md), "TLS verification was turned off for: prometheus") {
		t.Errorf("report.md does not say TLS verification was off")
	}
	if !strings.Contains(printed.String(), "TLS verification of Prometheus is off") {
		t.Errorf("no warning that Prometheus TLS verification is off")
	}
}
