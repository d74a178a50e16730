package benchkit

import (
	"fmt"
	"math"
	"slices"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/search"
)

// Searcher returns the names of the k best tools for query, best first. The
// evaluation takes any searcher, so the same sets can score the index
// directly, the registry, or the HTTP API.
type Searcher func(query string, k int) ([]string, error)

// RetrievalScores are the metrics of shared/benchdata/toolret/README.md, as
// fractions: recall@k = |gold ∩ top k| / |gold| averaged over queries; MRR =
// mean of 1/rank of the first gold tool within the top MRRDepth (0 if none).
type RetrievalScores struct {
	Queries          int
	R1, R5, R10, MRR float64
	// R5SE and MRRSE are standard errors of the means: differences smaller
	// than about twice these are noise.
	R5SE, MRRSE float64
}

// MRRDepth is how deep MRR looks: the search API's page maximum.
const MRRDepth = 100

// EvaluateRetrieval runs every query through search and scores the results.
func EvaluateRetrieval(queries []RetrievalQuery, search Searcher) (RetrievalScores, error) {
	var s RetrievalScores
	var r5, rr []float64
	for _, q := range queries {
		got, err := search(q.Query, MRRDepth)
		if err != nil {
			return s, fmt.Errorf("query %s: %w", q.QID, err)
		}
		recall := func(k int) float64 {
			n := 0
			for _, g := range q.Gold {
				if slices.Contains(got[:min(k, len(got))], g) {
					n++
				}
			}
			return float64(n) / float64(len(q.Gold))
		}
		s.R1 += recall(1)
		s.R10 += recall(10)
		r5 = append(r5, recall(5))
		rank := 0.0
		for i, name := range got {
			if slices.Contains(q.Gold, name) {
				rank = 1 / float64(i+1)
				break
			}
		}
		rr = append(rr, rank)
	}
	s.Queries = len(queries)
	if s.Queries > 0 {
		n := float64(s.Queries)
		s.R1, s.R10 = s.R1/n, s.R10/n
		s.R5, s.R5SE = meanSE(r5)
		s.MRR, s.MRRSE = meanSE(rr)
	}
	return s, nil
}

func meanSE(xs []float64) (mean, se float64) {
	n := float64(len(xs))
	for _, x := range xs {
		mean += x
	}
	mean /= n
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss/(n-1)) / math.Sqrt(n)
}

// IndexSearcher is a Searcher over a search.Index.
func IndexSearcher(x *search.Index) Searcher {
	return func(query string, k int) ([]string, error) {
		res, err := x.Search(switchboard.SearchQuery{Query: query, Limit: k}, nil)
		if err != nil {
			return nil, err
		}
		names := make([]string, len(res.Items))
		for i, h := range res.Items {
			names[i] = h.Name
		}
		return names, nil
	}
}
