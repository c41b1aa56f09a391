package cluster

// K8sConfig placeholder
type K8sConfig struct{}

func (K8sConfig) validate() []error { return nil }
