package inputfile

// Kind is a kind of file meshbench reads: what messages call it, its size cap, a line cap for line-oriented files,
// and how to fix a refused one.
type Kind int

// The kinds of input files. Caps are generous for what meshbench writes or a person writes, and small enough that
// reading a file at its cap leaves the machine usable.
const (
	Scenario        Kind = iota + 1 // the scenario YAML (-f)
	Manifest                        // a file of spec.workload.manifests (paths, or a file of the kustomization)
	Kubeconfig                      // --kubeconfig, $KUBECONFIG's files, ~/.kube/config
	RunMeta                         // a run directory's run.json
	Summary                         // a run directory's summary.json
	Samples                         // a run directory's samples.jsonl
	Cases                           // a run directory's cases.jsonl
	LabelRecord                     // a run directory's namespace-labels.json
	Shape                           // meshbench project -f
	RPSPerPod                       // meshbench project --rps-per-pod
	IstiodCurve                     // meshbench project --istiod-curve
	CABundle                        // meshbench images --ca-certs
	GoMod                           // the go.mod of meshbench's source (meshbench images --source)
	PrometheusToken                 // spec.prometheus.bearerTokenFile
	PrometheusCA                    // spec.prometheus.caFile
	KubeconfigFile                  // a file the kubeconfig's context names (client-certificate, client-key, certificate-authority, tokenFile)
)

// Caps in bytes, one per kind (Kind.Max); docs/reliability.md lists them.
const (
	KiB = 1 << 10
	MiB = 1 << 20
	GiB = 1 << 30

	// MaxScenario: the shipped examples are about 1 KiB.
	MaxScenario = 1 * MiB
	// MaxManifest: one file of an app's manifests; the API server refuses an object above about 1.5 MiB, and a file
	// holds several.
	MaxManifest = 16 * MiB
	// MaxManifests: all the files of one scenario's manifests together.
	MaxManifests = 64 * MiB
	// MaxKubeconfig: a merged kubeconfig of a hundred clusters with embedded certificates is below 1 MiB.
	MaxKubeconfig = 4 * MiB
	// MaxRunMeta: run.json holds the scenario and the plan (about 220 bytes a case).
	MaxRunMeta = 64 * MiB
	// MaxSummary: summary.json is about the size of samples.jsonl's figures, aggregated.
	MaxSummary = 512 * MiB
	// MaxSamples: a long run of a large app writes hundreds of MiB of samples.
	MaxSamples = 1 * GiB
	// MaxSampleLine: one sample is about 400 bytes.
	MaxSampleLine = 64 * KiB
	// MaxCases and MaxCaseLine: a case line holds facts, timings and a failure's reason (a few KiB).
	MaxCases    = 256 * MiB
	MaxCaseLine = 1 * MiB
	// MaxLabelRecord: the namespaces and workloads a run relabelled.
	MaxLabelRecord = 16 * MiB
	// MaxShape: a few lines of YAML.
	MaxShape = 1 * MiB
	// MaxRPSPerPod: one line per pod (a million pods of "name rate").
	MaxRPSPerPod     = 64 * MiB
	MaxRPSPerPodLine = 64 * KiB
	// MaxIstiodCurve: hack/istiodscale writes a few KiB.
	MaxIstiodCurve = 4 * MiB
	// MaxCABundle: the Debian and Fedora bundles are about 220 KiB.
	MaxCABundle = 1 * MiB
	// MaxGoMod: meshbench's go.mod is a few KiB.
	MaxGoMod = 1 * MiB
	// MaxPrometheusToken: a projected ServiceAccount token is about 1 KiB; it is read again on every query.
	MaxPrometheusToken = 64 * KiB
	// MaxPrometheusCA: the CA that signed Prometheus' certificate, or a bundle (the system's roots are about 220 KiB).
	MaxPrometheusCA = 1 * MiB
	// MaxKubeconfigFile: a certificate, key, CA bundle or token; the system's roots are about 220 KiB.
	MaxKubeconfigFile = 1 * MiB
)

type kindSpec struct {
	name    string // what messages call a file of this kind
	max     int64  // size cap in bytes
	maxLine int64  // line cap in bytes; 0: not read line by line
	hint    string // how to fix a refused file
}

// kinds is indexed by Kind; it is never written.
var kinds = [...]kindSpec{
	Scenario: {"scenario file", MaxScenario, 0,
		"give the path of a scenario YAML file such as examples/quickstart.yaml"},
	Manifest: {"manifest file", MaxManifest, 0,
		"name YAML or JSON files of Kubernetes objects in spec.workload.manifests (split a larger file in several)"},
	Kubeconfig: {"kubeconfig", MaxKubeconfig, 0,
		"give the kubeconfig file with --kubeconfig (or $KUBECONFIG), e.g. ~/.kube/config"},
	RunMeta: {"run.json", MaxRunMeta, 0,
		"give a run directory meshbench wrote (it holds run.json, samples.jsonl and cases.jsonl)"},
	Summary: {"summary.json", MaxSummary, 0,
		"give a run directory meshbench wrote; delete a damaged summary.json and meshbench report recomputes it"},
	Samples: {"samples.jsonl", MaxSamples, MaxSampleLine,
		"give a run directory meshbench wrote; a samples.jsonl above the cap is not one run's"},
	Cases: {"cases.jsonl", MaxCases, MaxCaseLine,
		"give a run directory meshbench wrote; a cases.jsonl above the cap is not one run's"},
	LabelRecord: {"namespace label record", MaxLabelRecord, 0,
		"give the run directory of the run that relabelled the namespaces (it holds namespace-labels.json)"},
	Shape: {"shape file", MaxShape, 0,
		"give a YAML file of the production shape (pods, nodes, namespaces, rps, ...) with -f"},
	RPSPerPod: {"rps-per-pod file", MaxRPSPerPod, MaxRPSPerPodLine,
		`give a text file with one pod per line, "NAME RPS" or "RPS", with --rps-per-pod`},
	IstiodCurve: {"istiod curve", MaxIstiodCurve, 0,
		"give the istiod-curve.json that hack/istiodscale wrote with --istiod-curve"},
	CABundle: {"CA bundle", MaxCABundle, 0,
		"give a PEM file of CA certificates with --ca-certs, e.g. /etc/ssl/certs/ca-certificates.crt"},
	GoMod: {"go.mod", MaxGoMod, 0,
		"run from a checkout of meshbench's source or pass --source DIR"},
	PrometheusToken: {"Prometheus bearer token file", MaxPrometheusToken, 0,
		"name the token file itself in spec.prometheus.bearerTokenFile (e.g. /var/run/secrets/kubernetes.io/serviceaccount/token)"},
	PrometheusCA: {"Prometheus CA file", MaxPrometheusCA, 0,
		"name the PEM file of the CA that signed Prometheus' certificate in spec.prometheus.caFile"},
	KubeconfigFile: {"kubeconfig's referenced file", MaxKubeconfigFile, 0,
		"fix the path in the kubeconfig's client-certificate, client-key, certificate-authority or tokenFile (or embed the data with the -data fields)"},
}

// Kinds is every kind, in the order of their definition.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kinds)-1)
	for k := Scenario; int(k) < len(kinds); k++ {
		out = append(out, k)
	}
	return out
}

func (k Kind) spec() kindSpec {
	if k <= 0 || int(k) >= len(kinds) {
		return kindSpec{name: "file", max: MaxScenario, hint: "give a regular file"}
	}
	return kinds[k]
}

// String is what messages call a file of this kind ("kubeconfig", "samples.jsonl").
func (k Kind) String() string { return k.spec().name }

// Max is the kind's size cap in bytes.
func (k Kind) Max() int64 { return k.spec().max }

// MaxLine is the kind's line cap in bytes (0 for a file not read line by line).
func (k Kind) MaxLine() int64 { return k.spec().maxLine }

// Hint says how to fix a refused file of this kind.
func (k Kind) Hint() string { return k.spec().hint }
