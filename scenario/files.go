package scenario

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"

	"github.com/meshbench/meshbench/internal/inputfile"
)

// checkTokenFile: spec.prometheus.bearerTokenFile is read on every request; a file inputfile's rule refuses (a
// directory, a FIFO, one above its cap), one that cannot be read or an empty one fails every query of the run
// (collectors/prom sends no "Bearer " without a token), so each is a problem before the run starts.
func checkTokenFile(path string) string {
	b, err := inputfile.ReadFile(path, inputfile.PrometheusToken)
	switch {
	case err != nil:
		return fileProblem(path, err)
	case len(b) == 0:
		return fmt.Sprintf("%q is empty: Prometheus would refuse every query; write the token into it", path)
	}
	return ""
}

// checkCAFile: spec.prometheus.caFile must hold PEM certificates (collectors/prom adds them to the pool that verifies
// Prometheus): a file inputfile's rule refuses, or one without a certificate, is a problem before the run starts,
// not at its first query.
func checkCAFile(path string) string {
	pem, err := inputfile.ReadFile(path, inputfile.PrometheusCA)
	if err != nil {
		return fileProblem(path, err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return fmt.Sprintf("%q holds no PEM certificate (-----BEGIN CERTIFICATE-----); give the CA certificate in PEM, e.g. openssl x509 -in ca.der -inform der -out ca.pem", path)
	}
	return ""
}

// fileProblem is the text of a file the scenario names that cannot be read: inputfile's message, which names the
// file, the cap and the fix, with the hint on relative paths for a missing one.
func fileProblem(path string, err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf("cannot read %q: %v; fix the path or remove the field", path, err)
	}
	return err.Error()
}
