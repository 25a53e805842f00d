{{/*
stevedore.name is the app.kubernetes.io/name label and the base of every
object name. A release whose name contains "karpenter" is taken to be a
Karpenter release being swapped in place (helm upgrade karpenter
<this chart>): it keeps Karpenter's name, so the Deployment's selector
(which Kubernetes never lets change), the Service's selector that scrape
configurations follow and every object name stay what Karpenter's chart
made them. Any other release is named after this chart. nameOverride wins
either way.
*/}}
{{- define "stevedore.name" -}}
{{- if .Values.nameOverride -}}
{{- .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains "karpenter" .Release.Name -}}
karpenter
{{- else -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "stevedore.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "stevedore.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
stevedore.metadata is the labels and annotations every object carries:
the chart's labels and additionalLabels, additionalAnnotations and, given
as "labels" and "extra", the object's own labels and annotations. Call it
with (dict "ctx" $ "extra" .Values.service.annotations).
*/}}
{{- define "stevedore.metadata" -}}
labels:
  {{- with .labels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
  {{- include "stevedore.labels" .ctx | nindent 2 }}
{{- $ann := merge (dict) (.extra | default dict) (.ctx.Values.additionalAnnotations | default dict) }}
{{- with $ann }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
stevedore.leaseName is the leader-election Lease. It is Karpenter's, so
that while a Karpenter replica and a stevedore replica run side by side
(a rolling swap, a rollback, both releases in one namespace) only the one
holding the Lease acts.
*/}}
{{- define "stevedore.leaseName" -}}karpenter-leader-election{{- end -}}

{{/*
stevedore.keepRelease fails the render when the release already has a
Deployment (Karpenter's, on an in-place swap) that this render would not
keep: another name, or another selector, which Kubernetes refuses to change.
Helm would otherwise delete that Deployment, its ServiceAccount, Service,
PDB and RBAC and create new ones under other names (breaking the
ServiceAccount's IAM association and the scrape configurations), or fail
half-way on the selector. Only a live install or upgrade can look: helm
template renders without a cluster, and lookup returns nothing.
*/}}
{{- define "stevedore.keepRelease" -}}
{{- $name := include "stevedore.fullname" . -}}
{{- $want := include "stevedore.selectorLabels" . | fromYaml -}}
{{- $existing := lookup "apps/v1" "Deployment" .Release.Namespace "" -}}
{{- range $d := (get ($existing | default dict) "items" | default list) -}}
{{- $labels := $d.metadata.labels | default dict -}}
{{- if eq (get $labels "app.kubernetes.io/instance") $.Release.Name -}}
{{- $have := $d.spec.selector.matchLabels | default dict -}}
{{- if or (ne $d.metadata.name $name) (ne (toJson $have) (toJson $want)) -}}
{{- fail (printf "release %s already has the Deployment %s/%s with the selector %s; this chart would make %s with %s, and so replace the release's Deployment, ServiceAccount, Service, PodDisruptionBudget and RBAC under other names (or fail on the selector, which Kubernetes never changes). To keep them, set nameOverride to %q (and fullnameOverride to %q if the release had one)" $.Release.Name $.Release.Namespace $d.metadata.name (toJson $have) $name (toJson $want) (get $have "app.kubernetes.io/name") $d.metadata.name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}


{{- define "stevedore.selectorLabels" -}}
app.kubernetes.io/name: {{ include "stevedore.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "stevedore.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "stevedore.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "stevedore.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "stevedore.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "stevedore.image" -}}
{{- $img := .Values.controller.image -}}
{{- if not $img.repository -}}
{{- fail "controller.image.repository is not set: stevedore publishes no image, so the chart has no default that could be pulled. Build one and push it to a registry your nodes can pull from (make image, or make image-oci without a container engine: see the Image section of docs/operations.md), then set controller.image.repository and controller.image.tag or controller.image.digest" -}}
{{- end -}}
{{- if regexMatch "(^|/)karpenter/controller$" $img.repository -}}
{{- fail (printf "controller.image.repository is %s, Karpenter's controller image: this chart deploys stevedore, and with Karpenter's image it would run Karpenter under stevedore's settings. Set controller.image.repository to your stevedore image and controller.image.tag or controller.image.digest to its tag or digest (a values file kept from Karpenter's chart carries Karpenter's; override them with --set)" $img.repository) -}}
{{- end -}}
{{- if $img.digest -}}
{{- if $img.tag -}}
{{- printf "%s:%s@%s" $img.repository $img.tag $img.digest -}}
{{- else -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- end -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end -}}

{{/* settings.awsFeatureGates as AWS_FEATURE_GATES: NodeClassCEL=false,DRA=false. */}}
{{- define "stevedore.awsFeatureGates" -}}
{{- $out := list -}}
{{- if hasKey . "nodeClassCEL" -}}{{- $out = append $out (printf "NodeClassCEL=%t" .nodeClassCEL) -}}{{- end -}}
{{- if hasKey . "dra" -}}{{- $out = append $out (printf "DRA=%t" .dra) -}}{{- end -}}
{{- join "," $out -}}
{{- end -}}

{{- define "stevedore.pullPolicy" -}}
{{- default .Values.imagePullPolicy .Values.controller.image.pullPolicy -}}
{{- end -}}

{{- define "stevedore.metricsPort" -}}
{{- if kindIs "invalid" .Values.controller.metricsPort -}}{{ .Values.controller.metrics.port }}{{- else -}}{{ .Values.controller.metricsPort }}{{- end -}}
{{- end -}}

{{- define "stevedore.healthProbePort" -}}
{{- if kindIs "invalid" .Values.controller.healthProbePort -}}{{ .Values.controller.healthProbe.port }}{{- else -}}{{ .Values.controller.healthProbePort }}{{- end -}}
{{- end -}}

{{/*
stevedore.featureGates renders settings.featureGates as FEATURE_GATES: a
string passes as it is; a map (nodeRepair: true) becomes NodeRepair=true,
in key order so that the output does not depend on map order.
*/}}
{{- define "stevedore.featureGates" -}}
{{- $g := .Values.settings.featureGates -}}
{{- if kindIs "string" $g -}}
{{- $g -}}
{{- else -}}
{{- $parts := list -}}
{{- range $k := keys $g | sortAlpha -}}
{{- $parts = append $parts (printf "%s%s=%v" (upper (substr 0 1 $k)) (substr 1 (len $k) $k) (get $g $k)) -}}
{{- end -}}
{{- join "," $parts -}}
{{- end -}}
{{- end -}}

{{/*
stevedore.affinity is .Values.affinity with the chart's selector labels
given to every pod (anti-)affinity term that has no labelSelector, as
Karpenter's chart does.
*/}}
{{- define "stevedore.affinity" -}}
{{- $aff := deepCopy .Values.affinity -}}
{{- $sel := dict "matchLabels" (include "stevedore.selectorLabels" . | fromYaml) -}}
{{- range $kind := list "podAffinity" "podAntiAffinity" -}}
{{- with get $aff $kind -}}
{{- range $term := (get . "requiredDuringSchedulingIgnoredDuringExecution" | default list) -}}
{{- if not (hasKey $term "labelSelector") }}{{ $_ := set $term "labelSelector" $sel }}{{ end -}}
{{- end -}}
{{- range $w := (get . "preferredDuringSchedulingIgnoredDuringExecution" | default list) -}}
{{- if not (hasKey $w.podAffinityTerm "labelSelector") }}{{ $_ := set $w.podAffinityTerm "labelSelector" $sel }}{{ end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml $aff -}}
{{- end -}}

{{/*
stevedore.topologySpreadConstraints gives the chart's selector labels to
every constraint without a labelSelector.
*/}}
{{- define "stevedore.topologySpreadConstraints" -}}
{{- $out := list -}}
{{- $sel := dict "matchLabels" (include "stevedore.selectorLabels" . | fromYaml) -}}
{{- range $c := .Values.topologySpreadConstraints -}}
{{- $c = deepCopy $c -}}
{{- if not (hasKey $c "labelSelector") }}{{ $_ := set $c "labelSelector" $sel }}{{ end -}}
{{- $out = append $out $c -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}
