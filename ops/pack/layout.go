package pack

// MegatronRow is one packed sequence in the Megatron-Bridge packed-SFT
// layout. loss_mask[i] = 1 when token i is a training target (it is aligned
// with input_ids, not shifted: the trainer shifts as for any causal LM).
// seq_start_id lists the offset of each sample in the row, starting with 0;
// sample k spans [seq_start_id[k], seq_start_id[k+1]) and the last one runs
// to the end of the row (rows are not padded). doc_ids[k] is sample k's id.
type MegatronRow struct {
	InputIDs   []int32  `arrow:"input_ids"`
	LossMask   []int8   `arrow:"loss_mask"`
	SeqStartID []int32  `arrow:"seq_start_id"`
	DocIDs     []string `arrow:"doc_ids"`
}

// TRLRow is one packed sequence in the TRL / Hugging Face layout, for
// padding-free training with flash-attention varlen kernels: labels is
// input_ids with -100 on masked positions (not shifted), position_ids restart
// at 0 for every sample, seq_lengths lists the samples' lengths in order and
// doc_ids their ids.
type TRLRow struct {
	InputIDs    []int32  `arrow:"input_ids"`
	Labels      []int32  `arrow:"labels"`
	PositionIDs []int32  `arrow:"position_ids"`
	SeqLengths  []int32  `arrow:"seq_lengths"`
	DocIDs      []string `arrow:"doc_ids"`
}

// IgnoreIndex is the label of masked positions in the TRL layout.
const IgnoreIndex = -100

// DroppedRow records a sample left out because it is longer than B.
type DroppedRow struct {
	ID            string `json:"id" arrow:"id"`
	Domain        string `json:"domain" arrow:"domain"`
	Family        string `json:"family" arrow:"family"`
	Source        string `json:"source" arrow:"source"`
	Tokens        int64  `json:"tokens" arrow:"tokens"`
	TrainedTokens int64  `json:"trained_tokens" arrow:"trained_tokens"`
}

// rowBuilder assembles packed rows of one layout, reusing its buffers.
type rowBuilder struct {
	layout string
	meg    MegatronRow
	trl    TRLRow
}

func (b *rowBuilder) reset() {
	b.meg = MegatronRow{InputIDs: b.meg.InputIDs[:0], LossMask: b.meg.LossMask[:0], SeqStartID: b.meg.SeqStartID[:0], DocIDs: b.meg.DocIDs[:0]}
	b.trl = TRLRow{InputIDs: b.trl.InputIDs[:0], Labels: b.trl.Labels[:0], PositionIDs: b.trl.PositionIDs[:0], SeqLengths: b.trl.SeqLengths[:0], DocIDs: b.trl.DocIDs[:0]}
}

// add appends one sample's packed tokens.
func (b *rowBuilder) add(id string, toks []uint32) {
	switch b.layout {
	case LayoutMegatron:
		r := &b.meg
		r.SeqStartID = append(r.SeqStartID, int32(len(r.InputIDs)))
		r.DocIDs = append(r.DocIDs, id)
		for _, v := range toks {
			r.InputIDs = append(r.InputIDs, int32(v&^trainedBit))
			r.LossMask = append(r.LossMask, int8(v>>31))
		}
	case LayoutTRL:
		r := &b.trl
		r.SeqLengths = append(r.SeqLengths, int32(len(toks)))
		r.DocIDs = append(r.DocIDs, id)
		for i, v := range toks {
			id := int32(v &^ trainedBit)
			r.InputIDs = append(r.InputIDs, id)
			if v&trainedBit != 0 {
				r.Labels = append(r.Labels, id)
			} else {
				r.Labels = append(r.Labels, IgnoreIndex)
			}
			r.PositionIDs = append(r.PositionIDs, int32(i))
		}
	}
}

// unpackedSample is one sample recovered from a packed row.
type unpackedSample struct {
	id   string
	ids  []int32
	mask []int8
}

// unpackMegatron splits a row by its boundaries, checking their consistency.
func unpackMegatron(r *MegatronRow) ([]unpackedSample, error) {
	n := len(r.InputIDs)
	if len(r.LossMask) != n {
		return nil, errorf("loss_mask has %d entries, input_ids %d", len(r.LossMask), n)
	}
	if len(r.SeqStartID) != len(r.DocIDs) || len(r.SeqStartID) == 0 {
		return nil, errorf("seq_start_id has %d entries, doc_ids %d", len(r.SeqStartID), len(r.DocIDs))
	}
	if r.SeqStartID[0] != 0 {
		return nil, errorf("seq_start_id[0] = %d, want 0", r.SeqStartID[0])
	}
	out := make([]unpackedSample, len(r.DocIDs))
	for k := range r.DocIDs {
		s, e := int(r.SeqStartID[k]), n
		if k+1 < len(r.SeqStartID) {
			e = int(r.SeqStartID[k+1])
		}
		if s >= e || e > n {
			return nil, errorf("sample %d (%s): bounds [%d, %d) in a row of %d", k, r.DocIDs[k], s, e, n)
		}
		for _, m := range r.LossMask[s:e] {
			if m != 0 && m != 1 {
				return nil, errorf("sample %d (%s): loss_mask value %d", k, r.DocIDs[k], m)
			}
		}
		out[k] = unpackedSample{id: r.DocIDs[k], ids: r.InputIDs[s:e], mask: r.LossMask[s:e]}
	}
	return out, nil
}

// unpackTRL splits a row by seq_lengths, checking labels and positions.
func unpackTRL(r *TRLRow) ([]unpackedSample, error) {
	n := len(r.InputIDs)
	if len(r.Labels) != n || len(r.PositionIDs) != n {
		return nil, errorf("labels %d / position_ids %d entries, input_ids %d", len(r.Labels), len(r.PositionIDs), n)
	}
	if len(r.SeqLengths) != len(r.DocIDs) || len(r.SeqLengths) == 0 {
		return nil, errorf("seq_lengths has %d entries, doc_ids %d", len(r.SeqLengths), len(r.DocIDs))
	}
	out := make([]unpackedSample, len(r.DocIDs))
	s := 0
	for k, l := range r.SeqLengths {
		e := s + int(l)
		if l <= 0 || e > n {
			return nil, errorf("sample %d (%s): length %d at offset %d in a row of %d", k, r.DocIDs[k], l, s, n)
		}
		mask := make([]int8, l)
		for i := s; i < e; i++ {
			if r.PositionIDs[i] != int32(i-s) {
				return nil, errorf("sample %d (%s): position_ids[%d] = %d, want %d", k, r.DocIDs[k], i, r.PositionIDs[i], i-s)
			}
			switch r.Labels[i] {
			case IgnoreIndex:
			case r.InputIDs[i]:
				mask[i-s] = 1
			default:
				return nil, errorf("sample %d (%s): labels[%d] = %d, neither -100 nor the input id %d", k, r.DocIDs[k], i, r.Labels[i], r.InputIDs[i])
			}
		}
		out[k] = unpackedSample{id: r.DocIDs[k], ids: r.InputIDs[s:e], mask: mask}
		s = e
	}
	if s != n {
		return nil, errorf("seq_lengths sum to %d, row has %d tokens", s, n)
	}
	return out, nil
}
