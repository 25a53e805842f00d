module github.com/stevedore-autoscaler/stevedore/test/karpenter-suite

go 1.26.6

require (
	go.yaml.in/yaml/v2 v2.4.3 // indirect
	sigs.k8s.io/karpenter v1.14.1 // indirect
	sigs.k8s.io/yaml v1.6.0
)
