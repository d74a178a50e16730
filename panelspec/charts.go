package panelspec

import (
	"fmt"
	"strconv"

	"github.com/switchboardhq/switchboard"
)

// Charts and numbers: chart (bar, line, area, pie), metric and progress.
// The schemas say the shapes; the rules here say what a schema says badly:
// a point budget (rows × series), values that must be numbers (a string
// "12" is refused, not guessed), one series and no negatives in a pie, and
// ranges the right way round. The budget is checked before the schema so a
// hostile array of a million points costs one length check, not a million
// schema errors.

const (
	TypeChart    = "chart"
	TypeMetric   = "metric"
	TypeProgress = "progress"
)

// MaxChartPoints bounds an inline chart: rows × series.
const MaxChartPoints = 2000

// maxChartRows is the schema's maxItems on chart.data.
const maxChartRows = 1000

// chartBudget reports an inline chart over its budgets; true means the
// schema check should be skipped (the node is refused already).
func (r *run) chartBudget(id string, props val) bool {
	data := props.get("data")
	if !data.isArr() {
		return false
	}
	series := 1
	if s := props.get("series"); s.isArr() && s.len() > 0 {
		series = s.len()
	}
	rows := data.len()
	if rows > maxChartRows || rows*series > MaxChartPoints {
		r.add(switchboard.CodeSpecBudget, id, nodePtr(id, "props", "data"),
			fmt.Sprintf("chart has %d rows × %d series = %d points; at most %d rows and %d points", rows, series, rows*series, maxChartRows, MaxChartPoints),
			"aggregate the data (by week, by month) or bind the chart to a source")
		return true
	}
	return false
}

func (r *run) chartRules(id string, props val) {
	kind, _ := props.strProp("kind")
	series := props.get("series")
	var keys []string
	if series.isArr() {
		seen := map[string]bool{}
		for i := range series.len() {
			k, ok := series.at(i).strProp("key")
			if !ok {
				continue
			}
			if seen[k] {
				r.add(switchboard.CodeSpecProps, id, nodePtr(id, "props", "series", strconv.Itoa(i), "key"), fmt.Sprintf("two series plot %s", quote(k)), "give each series its own key")
			}
			seen[k] = true
			keys = append(keys, k)
		}
		if kind == "pie" && series.len() > 1 {
			r.add(switchboard.CodeSpecProps, id, nodePtr(id, "props", "series"), "a pie chart shows one series", "keep one series or use kind \"bar\"")
		}
	}
	if x, ok := props.get("x").strProp("key"); ok && contains(keys, x) {
		r.add(switchboard.CodeSpecProps, id, nodePtr(id, "props", "x", "key"), fmt.Sprintf("%s is both the x field and a series", quote(x)), "plot another field, or pick another x")
	}
	if y := props.get("y"); y.isObj() {
		if lo, ok := y.numProp("min"); ok {
			if hi, ok := y.numProp("max"); ok && lo >= hi {
				r.add(switchboard.CodeSpecProps, id, nodePtr(id, "props", "y", "min"), "y.min must be below y.max", "swap them")
			}
		}
	}
	data := props.get("data")
	if !data.isArr() {
		return
	}
	for i := range data.len() {
		row := data.at(i)
		if !row.isObj() {
			continue
		}
		for _, k := range keys {
			v := row.get(k)
			if !v.ok() || v.kind() == kNull {
				continue // a gap
			}
			at := nodePtr(id, "props", "data", strconv.Itoa(i), k)
			switch {
			case v.kind() == kStr:
				sug := "write the number without quotes"
				if _, err := strconv.ParseFloat(v.str(), 64); err != nil {
					sug = "use a number, or null for no value"
				}
				r.add(switchboard.CodeSpecProps, id, at, fmt.Sprintf("series %s needs numbers; got the string %s", quote(k), quote(v.str())), sug)
			case v.kind() != kNum:
				r.add(switchboard.CodeSpecProps, id, at, fmt.Sprintf("series %s needs numbers", quote(k)), "use a number, or null for no value")
			case kind == "pie" && v.num() < 0:
				r.add(switchboard.CodeSpecProps, id, at, "a pie slice cannot be negative", "use kind \"bar\" for values below zero")
			}
		}
	}
}

func (r *run) progressRules(id string, props val) {
	v, ok := props.numProp("value")
	if !ok {
		return
	}
	hi := 100.0
	if m, ok := props.numProp("max"); ok {
		hi = m
	}
	if v > hi {
		r.add(switchboard.CodeSpecProps, id, nodePtr(id, "props", "value"), fmt.Sprintf("value %g is over max %g", v, hi), "raise max, or cap value at max")
	}
}
