package cni

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/internal/nettool"
	"github.com/meshbench/meshbench/scenario"
)

// RawDir is the run directory's folder of raw tool output.
const RawDir = "raw"

// RawKind is what a raw output file holds; its name says it (the extension), so a reader that opens
// raw/<path>-<test>-<n>.json can rely on a JSON document.
type RawKind string

const (
	// rawJSON is the tool's own JSON report (iperf3 -J, the built-in RR/CRR tool): the bytes parse as JSON.
	rawJSON RawKind = "json"
	// rawText is netperf's own text output of a run that exited 0.
	rawText RawKind = "text"
	// rawError is not the tool's report: why the exec failed, then whatever the tool printed (stdout that is not
	// its JSON, netperf text of a failed run).
	rawError RawKind = "error"
)

// rawKinds in the order ParseRawName tries their extensions (".err.txt" before ".txt").
var rawKinds = []RawKind{rawError, rawJSON, rawText}

func (k RawKind) ext() string {
	switch k {
	case rawJSON:
		return ".json"
	case rawText:
		return ".txt"
	default:
		return ".err.txt"
	}
}

// rawName is where sample n of a path x test keeps its raw output of kind k, relative to the run directory:
// raw/<path>-<test>-<n>.json, .txt or .err.txt. It is pure.
func rawName(p scenario.CNIPath, t scenario.CNITest, n int, k RawKind) string {
	return filepath.Join(RawDir, fmt.Sprintf("%s-%s-%d%s", p, t, n, k.ext()))
}

// ParseRawName is rawName's inverse on a file name (with or without the raw/ folder); ok is false for a name
// rawName never gives (unknown path or test, no sample number, another extension). It is pure.
func ParseRawName(name string) (p scenario.CNIPath, t scenario.CNITest, n int, k RawKind, ok bool) {
	base := filepath.Base(name)
	for _, kind := range rawKinds {
		stem, found := strings.CutSuffix(base, kind.ext())
		if !found {
			continue
		}
		i := strings.LastIndexByte(stem, '-')
		if i < 0 {
			return "", "", 0, "", false
		}
		num, err := strconv.Atoi(stem[i+1:])
		if err != nil || num < 1 || strconv.Itoa(num) != stem[i+1:] {
			return "", "", 0, "", false
		}
		// Path names hold '-' (same-node): match the whole stem against the known path x test pairs.
		for _, path := range scenario.AllCNIPaths {
			for _, test := range scenario.AllCNITests {
				if stem[:i] == string(path)+"-"+string(test) {
					return path, test, num, kind, true
				}
			}
		}
		return "", "", 0, "", false
	}
	return "", "", 0, "", false
}

// rawOutput is what to keep of one exec of a test: its kind and bytes, or keep=false for an exec Ctrl-C interrupted
// that printed nothing. stdout is rawJSON only when the tool's output parses as JSON; else rawError, the error
// first. It is pure.
func rawOutput(tool nettool.Tool, stdout []byte, execErr error, interrupted bool) (kind RawKind, data []byte, keep bool) {
	if len(stdout) > 0 {
		if tool == nettool.ToolNetperf {
			if execErr == nil {
				return rawText, stdout, true
			}
		} else if json.Valid(stdout) {
			return rawJSON, stdout, true
		}
	}
	if interrupted && len(stdout) == 0 {
		return "", nil, false
	}
	var b strings.Builder
	switch {
	case execErr != nil:
		b.WriteString("exec failed: " + execErr.Error() + "\n")
	case len(stdout) == 0:
		b.WriteString("exec succeeded but printed nothing on stdout\n")
	default:
		fmt.Fprintf(&b, "%s printed output that is not its JSON report\n", tool)
	}
	if len(stdout) > 0 {
		b.WriteString("--- stdout ---\n")
		b.Write(stdout)
		if stdout[len(stdout)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return rawError, []byte(b.String()), true
}

// writeRaw writes one sample's raw output under runDir and removes the sample's files of the other kinds (an
// earlier attempt of the same sample), so that a sample has one raw file. It returns the file's path relative to
// runDir.
func writeRaw(runDir string, p scenario.CNIPath, t scenario.CNITest, n int, kind RawKind, data []byte) (string, error) {
	if err := os.MkdirAll(filepath.Join(runDir, RawDir), 0o755); err != nil {
		return "", err
	}
	rel := rawName(p, t, n, kind)
	if err := os.WriteFile(filepath.Join(runDir, rel), data, 0o644); err != nil {
		return "", err
	}
	for _, other := range rawKinds {
		if other == kind {
			continue
		}
		if err := os.Remove(filepath.Join(runDir, rawName(p, t, n, other))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return rel, err
		}
	}
	return rel, nil
}

// removeRaw deletes the raw output files of the given case IDs (<path>/<test>) from runDir/raw and returns their
// paths relative to runDir: a resumed run's re-run cases must not leave an earlier attempt's files beside their own.
func removeRaw(runDir string, caseIDs []string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(runDir, RawDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list raw output: %w", err)
	}
	want := map[string]bool{}
	for _, id := range caseIDs {
		want[id] = true
	}
	var removed []string
	for _, e := range entries {
		p, t, _, _, ok := ParseRawName(e.Name())
		if !ok || e.IsDir() || !want[scenario.CNICaseID(p, t)] {
			continue
		}
		rel := filepath.Join(RawDir, e.Name())
		if err := os.Remove(filepath.Join(runDir, rel)); err != nil {
			return removed, fmt.Errorf("remove raw output of an earlier attempt: %w", err)
		}
		removed = append(removed, rel)
	}
	return removed, nil
}
