package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/zapr"
	"go.uber.org/zap/zapcore"
)

// karpenterLogKeys are the keys of Karpenter's JSON log lines, as its
// logging documentation and encoder configuration name them.
var karpenterLogKeys = struct {
	message, level, time, logger, caller, commit string
	levels                                       map[zapcore.Level]string
}{
	message: "message", level: "level", time: "time", logger: "logger", caller: "caller", commit: "commit",
	levels: map[zapcore.Level]string{zapcore.DebugLevel: "DEBUG", zapcore.InfoLevel: "INFO", zapcore.ErrorLevel: "ERROR"},
}

// TestLogLinesHaveKarpentersKeys logs through the controller's logger at
// each level and checks every key and value that log-based alerts written
// for Karpenter match on.
func TestLogLinesHaveKarpentersKeys(t *testing.T) {
	k := karpenterLogKeys
	for _, tc := range []struct {
		name       string
		level      zapcore.Level
		revision   string
		log        func(buf *bytes.Buffer, level zapcore.Level, revision string)
		wantLevel  string
		wantLogger string
		wantCaller bool
		wantKeys   []string
		absentKeys []string
	}{
		{
			name: "info", level: zapcore.InfoLevel, revision: "0123abcd",
			log: func(buf *bytes.Buffer, level zapcore.Level, revision string) {
				zapr.NewLogger(buildZap(zapcore.AddSync(buf), zapcore.AddSync(buf), level, revision)).WithName("provisioner").
					Info("created nodeclaim", "nodepool", "default")
			},
			wantLevel: k.levels[zapcore.InfoLevel], wantLogger: "controller.provisioner",
			wantKeys: []string{k.message, k.level, k.time, k.logger, k.commit, "nodepool"}, absentKeys: []string{k.caller, "msg", "ts"},
		},
		{
			name: "error", level: zapcore.InfoLevel, revision: "0123abcd",
			log: func(buf *bytes.Buffer, level zapcore.Level, revision string) {
				zapr.NewLogger(buildZap(zapcore.AddSync(buf), zapcore.AddSync(buf), level, revision)).Error(errors.New("boom"), "launching nodeclaim")
			},
			wantLevel: k.levels[zapcore.ErrorLevel], wantLogger: "controller",
			wantKeys: []string{k.message, k.level, k.time, k.logger, k.commit, "error"}, absentKeys: []string{k.caller, "stacktrace"},
		},
		{
			name: "debug with caller, no revision", level: zapcore.DebugLevel,
			log: func(buf *bytes.Buffer, level zapcore.Level, revision string) {
				zapr.NewLogger(buildZap(zapcore.AddSync(buf), zapcore.AddSync(buf), level, revision)).V(1).Info("considering candidates")
			},
			wantLevel: k.levels[zapcore.DebugLevel], wantLogger: "controller", wantCaller: true,
			wantKeys: []string{k.message, k.level, k.time, k.logger, k.caller}, absentKeys: []string{k.commit},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tc.log(&buf, tc.level, tc.revision)
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if len(lines) != 1 {
				t.Fatalf("%d lines, want 1: %q", len(lines), buf.String())
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
				t.Fatalf("not JSON: %v: %s", err, lines[0])
			}
			for _, key := range tc.wantKeys {
				if _, ok := got[key]; !ok {
					t.Errorf("no %q in %s", key, lines[0])
				}
			}
			for _, key := range tc.absentKeys {
				if _, ok := got[key]; ok {
					t.Errorf("unexpected %q in %s", key, lines[0])
				}
			}
			if got[k.level] != tc.wantLevel {
				t.Errorf("level %v, want %s", got[k.level], tc.wantLevel)
			}
			if got[k.logger] != tc.wantLogger {
				t.Errorf("logger %v, want %s", got[k.logger], tc.wantLogger)
			}
			if tc.revision != "" && got[k.commit] != tc.revision {
				t.Errorf("commit %v, want %s", got[k.commit], tc.revision)
			}
			if c, _ := got[k.caller].(string); tc.wantCaller && !strings.HasPrefix(c, "stevedore/logging_test.go:") {
				t.Errorf("caller %q, want this file", c)
			}
			ts, _ := got[k.time].(string)
			if _, err := time.Parse("2006-01-02T15:04:05.000Z0700", ts); err != nil {
				t.Errorf("time %q is not ISO 8601 with milliseconds: %v", ts, err)
			}
		})
	}
}

// TestLogLevelFilter checks that the level named by --log-level drops the
// lines below it.
func TestLogLevelFilter(t *testing.T) {
	for _, tc := range []struct {
		flag string
		want []string
	}{
		{"debug", []string{"DEBUG", "INFO", "ERROR"}},
		{"info", []string{"INFO", "ERROR"}},
		{"error", []string{"ERROR"}},
	} {
		var buf bytes.Buffer
		o := &controllerOptions{logLevel: tc.flag, logOutput: &buf}
		l, closeLogs, err := newLogger(o)
		if err != nil {
			t.Fatal(err)
		}
		l.V(1).Info("d")
		l.Info("i")
		l.Error(errors.New("e"), "e")
		closeLogs()
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%s: not JSON: %q", tc.flag, line)
			}
			got = append(got, m[karpenterLogKeys.level].(string))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("--log-level %s: levels %v, want %v", tc.flag, got, tc.want)
		}
	}
}
