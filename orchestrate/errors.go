package orchestrate

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
