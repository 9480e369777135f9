package transport

import "github.com/twmb/franz-go/pkg/kmsg"

// Feature is a versioned feature of the cluster (KIP-584) as ApiVersions
// reports it: the levels a node supports, and the level finalized for the
// cluster, which is the one clients act on. Kafka's clients read
// transaction.version, for example: at level 2 (KIP-890 part 2) they send
// no AddPartitionsToTxn or AddOffsetsToTxn, since the partition leaders
// and group coordinators add the partitions for them.
type Feature struct {
	// Name is the feature's name, as Kafka spells it:
	// "transaction.version".
	Name string
	// MinLevel and MaxLevel are the levels the node supports.
	MinLevel, MaxLevel int16
	// Finalized is the level in effect. At zero the feature is left out
	// of the finalized features, as Kafka leaves out a feature at level 0.
	Finalized int16
}

// The features partlog knows.
const (
	// FeatureTransactionVersion is transaction.version: 0 is the
	// transaction protocol of KIP-98, 2 is KIP-890 part 2's, where the
	// coordinator bumps the producer epoch at the end of every
	// transaction and a transactional Produce (version 12 and up) or
	// TxnOffsetCommit (version 5 and up) adds its partition itself.
	FeatureTransactionVersion = "transaction.version"
)

// FeatureReporter is implemented by a Client that knows the features of
// the node it stands for: a node in the process (a Server reports them in
// ApiVersions, version 3 and up, asking once, when it is made), a
// TCPClient (from the node's ApiVersions answer) and a ClusterClient
// (from a node it reached).
type FeatureReporter interface {
	// Features returns the node's features. The Server keeps the slice.
	Features() []Feature
}

// featuresOf returns what h reports, or nothing for a Client that is not
// a FeatureReporter.
func featuresOf(h Client) []Feature {
	if fr, ok := h.(FeatureReporter); ok {
		return fr.Features()
	}
	return nil
}

// finalizedFeaturesEpoch is the epoch of the finalized features a Server
// reports: they are the node's options, fixed while it runs, so one epoch
// serves. Kafka's clients read the finalized features only when the epoch
// is not -1.
const finalizedFeaturesEpoch = 1

// addFeatures puts features into an ApiVersions answer.
func addFeatures(resp *kmsg.ApiVersionsResponse, features []Feature) {
	for _, f := range features {
		s := kmsg.NewApiVersionsResponseSupportedFeature()
		s.Name, s.MinVersion, s.MaxVersion = f.Name, f.MinLevel, f.MaxLevel
		resp.SupportedFeatures = append(resp.SupportedFeatures, s)
		if f.Finalized > 0 {
			fin := kmsg.NewApiVersionsResponseFinalizedFeature()
			fin.Name, fin.MinVersionLevel, fin.MaxVersionLevel = f.Name, f.Finalized, f.Finalized
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, fin)
			resp.FinalizedFeaturesEpoch = finalizedFeaturesEpoch
		}
	}
}

// featuresFrom reads the features of an ApiVersions answer.
func featuresFrom(resp *kmsg.ApiVersionsResponse) []Feature {
	var out []Feature
	for _, s := range resp.SupportedFeatures {
		f := Feature{Name: s.Name, MinLevel: s.MinVersion, MaxLevel: s.MaxVersion}
		if resp.FinalizedFeaturesEpoch >= 0 {
			for _, fin := range resp.FinalizedFeatures {
				if fin.Name == s.Name {
					f.Finalized = fin.MaxVersionLevel
				}
			}
		}
		out = append(out, f)
	}
	return out
}

// FinalizedLevel returns the level of the feature named name in features,
// or 0 when it is not finalized there.
func FinalizedLevel(features []Feature, name string) int16 {
	for _, f := range features {
		if f.Name == name {
			return f.Finalized
		}
	}
	return 0
}
