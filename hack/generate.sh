#!/usr/bin/env bash
# Regenerates the API code that is derived from the types in api/:
# the DeepCopy methods (zz_generated.deepcopy.go in each API package) and the
# CustomResourceDefinitions in api/crds. Run it after changing any type or
# marker under api/, and commit the result; a test fails when the committed
# CRDs are out of date.
#
# Markers in the doc comment of a type (not of a field) are rewritten by gofmt
# like any doc comment: two single quotes become a typographic quote, which
# breaks a CEL rule. Write size() == 0 rather than == '' there.
set -euo pipefail

cd "$(dirname "$0")/.."
go tool controller-gen object paths="./api/karpenter/...;./api/aws/...;./api/autoscaling/..."
go tool controller-gen crd paths="./api/karpenter/...;./api/aws/...;./api/autoscaling/..." output:crd:dir=api/crds
# Constraints on fields of core/v1 types (the taints), which markers cannot
# reach; see api/crds/crdfinish.
go run ./api/crds/crdfinish/cmd api/crds/*.yaml
# The chart installs the same CRDs (hack/charttest checks they are equal).
cp api/crds/karpenter.sh_nodepools.yaml api/crds/karpenter.sh_nodeclaims.yaml api/crds/karpenter.k8s.aws_ec2nodeclasses.yaml charts/stevedore/crds/
cp api/crds/karpenter.sh_nodeoverlays.yaml charts/stevedore/crds/
cp api/crds/autoscaling.x-k8s.io_capacitybuffers.yaml charts/stevedore/crds/
