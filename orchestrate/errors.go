package orchestrate

import (
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/workloads"
)

// InputError means the user's input (a flag, the scenario, the kubeconfig, the cluster's answer to what the scenario
// asks) is what is wrong, and nothing was created or changed; the cobra layer exits 2 for it.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputError(err error) error {
	if err == nil {
		return nil
	}
	return &InputError{Err: err}
}

// checkAllowExisting refuses app existing without --allow-existing-namespaces before anything is contacted or
// changed (an InputError: exit 2): the run relabels and restarts workloads meshbench did not create.
func checkAllowExisting(cfg RunConfig) error {
	if cfg.Scenario != nil && cfg.Scenario.Spec.Workload.App == scenario.AppExisting && !cfg.AllowExisting {
		return inputError(workloads.ErrExistingNeedsFlag)
	}
	return nil
}
