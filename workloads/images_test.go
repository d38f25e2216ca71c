package workloads

import (
	"slices"
	"strings"
	"testing"
)

// TestImages: the image list covers every pod of every topology, from the images each app is configured with.
func TestImages(t *testing.T) {
	t.Parallel()
	chain := mustScenario(t, chainScenario)
	refs, err := Images(chain)
	if err != nil {
		t.Fatal(err)
	}
	// fortio-chain runs the agent only: depth 2, fan-out 2 is 1+2+4 services, in each of the two topologies.
	if len(refs) != 14 || slices.ContainsFunc(refs, func(r string) bool { return r != chain.Spec.Images.Agent }) {
		t.Errorf("fortio-chain images %v, want the agent %s 14 times", refs, chain.Spec.Images.Agent)
	}
	for _, tc := range []struct {
		name, yaml string
		parts      []string
	}{
		{"bank-of-anthos", boaScenario, []string{"/frontend:", "/userservice:", "/contacts:", "/balancereader:", "/ledgerwriter:", "/transactionhistory:", "/accounts-db:", "/ledger-db:"}},
		{"bookinfo", bookinfoScenario, []string{"/examples-bookinfo-productpage-v1:", "/examples-bookinfo-details-v1:", "/examples-bookinfo-reviews-v", "/examples-bookinfo-ratings-v1:"}},
	} {
		s := mustScenario(t, tc.yaml)
		refs, err := Images(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range tc.parts {
			if !slices.ContainsFunc(refs, func(r string) bool { return strings.Contains(r, part) }) {
				t.Errorf("%s: no image with %q in %v", tc.name, part, refs)
			}
		}
	}
	none := mustScenario(t, "apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: n}\nspec:\n  cni: {tests: [tcp]}\n")
	if refs, err := Images(none); err != nil || refs != nil {
		t.Errorf("no app: %v, %v", refs, err)
	}
}
