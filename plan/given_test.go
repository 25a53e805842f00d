package plan

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// givenPods is a snapshot's shape: workloads with UIDs and the pods they
// own, one bound to a given node.
const givenPods = `apiVersion: v1
kind: Node
metadata: {name: node-a, labels: {kubernetes.io/hostname: node-a}}
status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-5d8f7, namespace: shop, uid: uid-web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: app, image: web, resources: {requests: {cpu: 100m}}}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-5d8f7-aaaaa
  namespace: shop
  labels: {app: web}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d8f7, uid: uid-web, controller: true}]
spec: {nodeName: node-a, containers: [{name: app, image: web, resources: {requests: {cpu: 100m}}}]}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-5d8f7-bbbbb
  namespace: shop
  labels: {app: web}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d8f7, uid: uid-web, controller: true}]
spec: {containers: [{name: app, image: web, resources: {requests: {cpu: 100m}}}]}
status: {phase: Pending}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-5d8f7-done
  namespace: shop
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d8f7, uid: uid-web, controller: true}]
spec: {containers: [{name: app, image: web}]}
status: {phase: Failed}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop, uid: uid-db}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: db, resources: {requests: {cpu: 100m}}}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: db-0
  namespace: shop
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: db, uid: uid-db, controller: true}]
spec: {nodeName: node-a, containers: [{name: db, image: db, resources: {requests: {cpu: 100m}}}]}
status: {phase: Running}
---
apiVersion: batch/v1
kind: Job
metadata: {name: report, namespace: batch, uid: uid-job}
spec:
  parallelism: 4
  completions: 2
  template:
    spec: {restartPolicy: Never, containers: [{name: report, image: report, resources: {requests: {cpu: 100m}}}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: report-1
  namespace: batch
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: report, uid: uid-job, controller: true}]
spec: {nodeName: node-a, restartPolicy: Never, containers: [{name: report, image: report, resources: {requests: {cpu: 100m}}}]}
status: {phase: Running}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: handwritten, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: handwritten}}
  template:
    metadata: {labels: {app: handwritten}}
    spec: {containers: [{name: app, image: app, resources: {requests: {cpu: 100m}}}]}
`

// TestPrepareGivenPods: a workload whose pods are given (by its UID) adds
// only the pods it is missing, so a snapshot's pods are not planned twice.
func TestPrepareGivenPods(t *testing.T) {
	objs := &Objects{}
	if err := objs.Decode("snapshot", []byte(givenPods)); err != nil {
		t.Fatal(err)
	}
	p := prepare(t, objs, Options{})
	count := map[string]int{}
	for _, pod := range p.Input.Pods {
		count[pod.Namespace+"/"+ownerName(pod.OwnerReferences)]++
	}
	bound := 0
	for _, n := range p.Input.Nodes {
		bound += len(n.Pods)
	}
	// web: 3 replicas, 2 given (one bound, one pending): 1 made, 1 given
	// pending. db: its one pod is given, bound. report: at most 2
	// completions, 1 given, bound: 1 made. handwritten: no UID, 2 made.
	want := map[string]int{"shop/web-5d8f7": 2, "batch/report": 1, "shop/handwritten": 2}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("%s: %d pending pods, want %d (all: %v)", k, count[k], n, count)
		}
	}
	if len(p.Input.Pods) != 5 || bound != 3 || p.Bound != 3 {
		t.Errorf("%d pending and %d bound pods (%d counted), want 5 and 3", len(p.Input.Pods), bound, p.Bound)
	}
	// The workloads given are not modified.
	for _, w := range objs.Workloads {
		if rs, ok := w.(*appsv1.ReplicaSet); ok && rs.Name == "web-5d8f7" && *rs.Spec.Replicas != 3 {
			t.Errorf("the ReplicaSet given now asks for %d replicas", *rs.Spec.Replicas)
		}
	}
}

func ownerName(refs []metav1.OwnerReference) string {
	for _, r := range refs {
		return r.Name
	}
	return ""
}
