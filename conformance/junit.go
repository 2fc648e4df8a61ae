package conformance

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"strings"

	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"
)

// writeJUnit writes report as JUnit XML to path: one testcase per spec
// (suite setup nodes left out), each with its rule IDs, slack and capture
// as properties. Ginkgo writes a property's value as the JSON encoding of
// the report entry ("\"HOMA-GRANT-001\""); string values are unquoted here
// so CI tools show the text. Errors: path cannot be written.
func writeJUnit(report types.Report, path string) error {
	cfg := reporters.JunitReportConfig{OmitTimelinesForSpecState: types.SpecStatePassed, OmitSuiteSetupNodes: true}
	if err := reporters.GenerateJUnitReportWithConfig(report, path, cfg); err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var suites reporters.JUnitTestSuites
	if err := xml.Unmarshal(b, &suites); err != nil {
		return err
	}
	for i := range suites.TestSuites {
		for j := range suites.TestSuites[i].TestCases {
			props := suites.TestSuites[i].TestCases[j].Properties
			if props == nil {
				continue
			}
			for k, p := range props.Properties {
				var s string
				if json.Unmarshal([]byte(p.Value), &s) == nil {
					props.Properties[k].Value = s
				}
			}
		}
	}
	return writeJUnitFile(path, suites)
}

// DemoteShouldFailures rewrites the JUnit report at path so that a failed
// spec labelled SHOULD is a warning, not a failure: its <failure> moves to
// <system-err> prefixed "WARNING (SHOULD): " and the counts drop, as
// homatest run treats it without --strict. Errors: path cannot be read,
// parsed or written.
func DemoteShouldFailures(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var suites reporters.JUnitTestSuites
	if err := xml.Unmarshal(b, &suites); err != nil {
		return err
	}
	for i := range suites.TestSuites {
		ts := &suites.TestSuites[i]
		for j := range ts.TestCases {
			tc := &ts.TestCases[j]
			if tc.Failure == nil || !strings.Contains(tc.Name, "SHOULD") {
				continue
			}
			tc.SystemErr = "WARNING (SHOULD): " + tc.Failure.Message + "\n" + tc.Failure.Description + "\n" + tc.SystemErr
			tc.Failure = nil
			ts.Failures--
			suites.Failures--
		}
	}
	return writeJUnitFile(path, suites)
}

// writeJUnitFile writes suites to path atomically (a temporary file renamed
// over it).
func writeJUnitFile(path string, suites reporters.JUnitTestSuites) error {
	out, err := xml.MarshalIndent(suites, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append([]byte(xml.Header), append(out, '\n')...), 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
