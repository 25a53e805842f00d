package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
)

// readPodList reads the pods of a JSON file for `plan --pods`: a JSON array
// of Pods, a List or PodList (as `kubectl get pods -o json` prints), or a
// single Pod; "-" reads standard input. Every pod is returned pending: its
// spec.nodeName and status are cleared, so that the plan packs it onto new
// capacity wherever it runs today. Pods that have finished (phase Succeeded
// or Failed) need no node and are left out. A pod without a namespace is in
// "default".
func readPodList(path string, stdin io.Reader) ([]*corev1.Pod, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("--pods %s: %w", path, err)
	}
	data = bytes.TrimSpace(data)
	var items []json.RawMessage
	switch {
	case len(data) == 0:
		return nil, fmt.Errorf("--pods %s: the file is empty; give a JSON array of Pods or a List of them", path)
	case data[0] == '[':
		if err := json.Unmarshal(data, &items); err != nil {
			return nil, fmt.Errorf("--pods %s: not a JSON array of Pods: %w", path, err)
		}
	case data[0] == '{':
		var head struct {
			Kind  string            `json:"kind"`
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(data, &head); err != nil {
			return nil, fmt.Errorf("--pods %s: not JSON: %w", path, err)
		}
		switch head.Kind {
		case "List", "PodList":
			items = head.Items
		case "Pod":
			items = []json.RawMessage{data}
		default:
			return nil, fmt.Errorf("--pods %s: kind %q: give a JSON array of Pods, a List or PodList of them, or a Pod", path, head.Kind)
		}
	default:
		return nil, fmt.Errorf("--pods %s: not JSON; give a JSON array of Pods or a List of them (kubectl get pods -o json)", path)
	}
	seen := map[string]int{}
	var pods []*corev1.Pod
	for i, raw := range items {
		pod := &corev1.Pod{}
		if err := json.Unmarshal(raw, pod); err != nil {
			return nil, fmt.Errorf("--pods %s: item %d: %w", path, i, err)
		}
		if pod.Kind != "" && pod.Kind != "Pod" {
			return nil, fmt.Errorf("--pods %s: item %d is a %s; only Pods may be listed", path, i, pod.Kind)
		}
		if pod.Name == "" {
			return nil, fmt.Errorf("--pods %s: item %d has no metadata.name; name every pod", path, i)
		}
		if pod.Namespace == "" {
			pod.Namespace = "default"
		}
		key := pod.Namespace + "/" + pod.Name
		if j, dup := seen[key]; dup {
			return nil, fmt.Errorf("--pods %s: items %d and %d are both pod %s; pod names must be unique in a namespace", path, j, i, key)
		}
		seen[key] = i
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		pod.APIVersion, pod.Kind = "v1", "Pod"
		pod.Spec.NodeName = ""
		pod.Status = corev1.PodStatus{}
		pods = append(pods, pod)
	}
	return pods, nil
}
