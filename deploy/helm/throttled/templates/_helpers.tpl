{{/* The chart's name, or nameOverride. */}}
{{- define "throttled.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's objects' name: fullnameOverride, or the release name with the chart's. */}}
{{- define "throttled.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "throttled.selectorLabels" -}}
app.kubernetes.io/name: {{ include "throttled.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "throttled.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "throttled.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "throttled.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "throttled.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret holding requirepass. */}}
{{- define "throttled.secretName" -}}
{{- default (include "throttled.fullname" .) .Values.auth.existingSecret }}
{{- end }}

{{/*
"true" when http-port serves: the HTTP decisions go through CHECK, which upstream mode does not
serve, so they are on in standalone mode only.
*/}}
{{- define "throttled.http" -}}
{{- if and .Values.http.enabled (ne .Values.mode "upstream") }}true{{ end }}
{{- end }}

{{/*
The pod template of every workload: "component" is primary, replica or upstream.
*/}}
{{- define "throttled.podTemplate" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
metadata:
  labels:
    {{- include "throttled.selectorLabels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
    {{- with $v.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
    {{- with $v.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "throttled.serviceAccountName" $root }}
  automountServiceAccountToken: false
  {{- with $v.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  securityContext:
    {{- toYaml $v.podSecurityContext | nindent 4 }}
  terminationGracePeriodSeconds: {{ $v.terminationGracePeriodSeconds }}
  containers:
    - name: throttled
      image: "{{ $v.image.repository }}:{{ $v.image.tag | default $root.Chart.AppVersion }}"
      imagePullPolicy: {{ $v.image.pullPolicy }}
      command:
        - /usr/local/bin/throttled
        - /etc/throttled/throttled.conf
      {{- /* The Secrets' values reach throttled as THROTTLED_<OPTION> environment options: not
        on its command line, where the pod's processes could read them, nor in the ConfigMap. */}}
      {{- if eq .component "replica" }}
      args:
        - --replicaof
        - {{ include "throttled.fullname" $root }}-0.{{ include "throttled.fullname" $root }}-headless.{{ $root.Release.Namespace }}.svc
        - {{ $v.ports.resp | quote }}
      {{- end }}
      env:
        {{- if $v.auth.enabled }}
        - name: THROTTLED_REQUIREPASS
          valueFrom:
            secretKeyRef:
              name: {{ include "throttled.secretName" $root }}
              key: {{ $v.auth.existingSecretKey }}
        {{- end }}
        {{- if and (eq .component "replica") $v.auth.enabled }}
        - name: THROTTLED_MASTERAUTH
          valueFrom:
            secretKeyRef:
              name: {{ include "throttled.secretName" $root }}
              key: {{ $v.auth.existingSecretKey }}
        {{- end }}
        {{- if and (eq .component "upstream") $v.upstream.existingSecret }}
        - name: THROTTLED_UPSTREAM
          valueFrom:
            secretKeyRef:
              name: {{ $v.upstream.existingSecret }}
              key: {{ $v.upstream.existingSecretKey }}
        {{- end }}
        # The Go runtime collects harder as its heap nears the container's memory limit; keep
        # maxmemory below it so that eviction, not the OOM killer, bounds the keyspace.
        - name: GOMEMLIMIT
          valueFrom:
            resourceFieldRef:
              containerName: throttled
              resource: limits.memory
      ports:
        - name: resp
          containerPort: {{ $v.ports.resp }}
          protocol: TCP
        {{- if include "throttled.http" $root }}
        - name: http
          containerPort: {{ $v.ports.http }}
          protocol: TCP
        {{- end }}
        {{- if $v.grpc.enabled }}
        - name: grpc
          containerPort: {{ $v.ports.grpc }}
          protocol: TCP
        {{- end }}
        - name: metrics
          containerPort: {{ $v.ports.metrics }}
          protocol: TCP
      startupProbe:
        httpGet:
          path: /healthz
          port: metrics
        {{- toYaml $v.startupProbe | nindent 8 }}
      livenessProbe:
        httpGet:
          path: /healthz
          port: metrics
        {{- toYaml $v.livenessProbe | nindent 8 }}
      readinessProbe:
        httpGet:
          path: /readyz
          port: metrics
        {{- toYaml $v.readinessProbe | nindent 8 }}
      {{- if $v.preStopSleepSeconds }}
      lifecycle:
        preStop:
          sleep:
            seconds: {{ $v.preStopSleepSeconds }}
      {{- end }}
      resources:
        {{- toYaml $v.resources | nindent 8 }}
      securityContext:
        {{- toYaml $v.securityContext | nindent 8 }}
      volumeMounts:
        - name: config
          mountPath: /etc/throttled
          readOnly: true
        - name: data
          mountPath: /data
        - name: tmp
          mountPath: /tmp
  volumes:
    - name: config
      projected:
        sources:
          - configMap:
              name: {{ include "throttled.fullname" $root }}
              items:
                - key: throttled.conf
                  path: throttled.conf
          {{- if $v.grpc.enabled }}
          - configMap:
              name: {{ include "throttled.fullname" $root }}-ratelimit
              items:
                {{- range $file, $_ := $v.grpc.rateLimitConfig }}
                - key: {{ $file }}
                  path: ratelimit/{{ $file }}
                {{- end }}
          {{- end }}
    - name: tmp
      emptyDir:
        medium: Memory
        sizeLimit: 16Mi
    {{- if or (eq .component "upstream") (not $v.persistence.enabled) }}
    - name: data
      emptyDir: {}
    {{- end }}
  {{- with $v.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/* The volume claim template of /data, for the StatefulSets. */}}
{{- define "throttled.volumeClaimTemplates" -}}
{{- $v := .Values -}}
{{- if $v.persistence.enabled -}}
volumeClaimTemplates:
  - metadata:
      name: data
      labels:
        {{- include "throttled.selectorLabels" . | nindent 8 }}
      {{- with $v.persistence.annotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      accessModes:
        {{- toYaml $v.persistence.accessModes | nindent 8 }}
      {{- with $v.persistence.storageClass }}
      storageClassName: {{ . | quote }}
      {{- end }}
      resources:
        requests:
          storage: {{ $v.persistence.size }}
{{- end }}
{{- end }}
