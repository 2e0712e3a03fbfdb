"""pytorch/examples' word_language_model (model.py, data.py and main.py's training loop),
ported to funcgrad. The edits to the original:

* the imports (``import funcgrad as torch`` ...);
* ``PositionalEncoding`` builds its table with ``stack`` instead of writing into
  ``pe[:, 0::2]`` (arrays are immutable), and the manual SGD step is
  ``p.data = p.data.add(p.grad, alpha=-lr)`` instead of ``p.data.add_(...)``: both
  documented idioms, and both still PyTorch code;
* a small built-in text instead of the WikiText-2 download, and fewer options.

Every ``--model`` of the original runs: LSTM, GRU, RNN_TANH, RNN_RELU and Transformer.
``tests/test_ports.py`` runs this source with PyTorch's imports and compares the two.
Run: ``python examples/word_language_model.py --model GRU --epochs 2``.
"""

import argparse
import math
import time

import funcgrad as torch
import funcgrad.nn as nn
import funcgrad.nn.functional as F

TEXT = """the quick brown fox jumps over the lazy dog
a journey of a thousand miles begins with a single step
the early bird catches the worm but the second mouse gets the cheese
all that glitters is not gold and not all those who wander are lost
the pen is mightier than the sword when the sword is far away
a watched pot never boils and a rolling stone gathers no moss
the best things in life are free but the rest are not cheap
actions speak louder than words and words speak louder than silence
"""


# ---- data.py --------------------------------------------------------------------------
class Dictionary(object):
    def __init__(self):
        self.word2idx = {}
        self.idx2word = []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


class Corpus(object):
    def __init__(self, text, repeats=(6, 2, 2)):
        self.dictionary = Dictionary()
        lines = text.strip().split("\n")
        self.train = self.tokenize(lines * repeats[0])
        self.valid = self.tokenize(lines[::-1] * repeats[1])
        self.test = self.tokenize(lines[1::2] * repeats[2])

    def tokenize(self, lines):
        for line in lines:
            for word in line.split() + ["<eos>"]:
                self.dictionary.add_word(word)
        idss = []
        for line in lines:
            ids = [self.dictionary.word2idx[word] for word in line.split() + ["<eos>"]]
            idss.append(torch.tensor(ids).type(torch.int64))
        return torch.cat(idss)


# ---- model.py -------------------------------------------------------------------------
class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super(RNNModel, self).__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ["LSTM", "GRU"]:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            try:
                nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
            except KeyError as e:
                raise ValueError("""An invalid option for `--model` was supplied,
                                 options are ['LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU']""") from e
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)

        if tie_weights:
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight

        self.init_weights()

        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        else:
            return weight.new_zeros(self.nlayers, bsz, self.nhid)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super(PositionalEncoding, self).__init__()
        self.dropout = nn.Dropout(p=dropout)

        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        # pe[:, 0::2] = sin, pe[:, 1::2] = cos, built whole (arrays are immutable)
        pe = torch.stack([torch.sin(position * div_term), torch.cos(position * div_term)], dim=2).view(max_len, d_model)
        pe = pe.unsqueeze(0).transpose(0, 1)
        self.register_buffer("pe", pe)

    def forward(self, x):
        x = x + self.pe[:x.size(0), :]
        return self.dropout(x)


class TransformerModel(nn.Transformer):
    """Container module with an encoder, a recurrent or transformer module, and a decoder."""

    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
        super(TransformerModel, self).__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid,
                                               num_encoder_layers=nlayers)
        self.model_type = "Transformer"
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout)

        self.input_emb = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)

        self.init_weights()

    def _generate_square_subsequent_mask(self, sz):
        return torch.log(torch.tril(torch.ones(sz, sz)))

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, src, has_mask=True):
        if has_mask:
            device = src.device
            if self.src_mask is None or self.src_mask.size(0) != len(src):
                mask = self._generate_square_subsequent_mask(len(src)).to(device)
                self.src_mask = mask
        else:
            self.src_mask = None

        src = self.input_emb(src) * math.sqrt(self.ninp)
        src = self.pos_encoder(src)
        output = self.encoder(src, mask=self.src_mask)
        output = self.decoder(output)
        return F.log_softmax(output, dim=-1)


# ---- main.py --------------------------------------------------------------------------
def batchify(data, bsz, device):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    data = data.view(bsz, -1).t().contiguous()
    return data.to(device)


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    else:
        return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


def build_model(args, ntokens, device):
    if args.model == "Transformer":
        return TransformerModel(ntokens, args.emsize, args.nhead, args.nhid, args.nlayers, args.dropout).to(device)
    return RNNModel(args.model, ntokens, args.emsize, args.nhid, args.nlayers, args.dropout, args.tied).to(device)


def evaluate(model, data_source, args, ntokens, criterion, eval_batch_size):
    model.eval()
    total_loss = 0.
    if args.model != "Transformer":
        hidden = model.init_hidden(eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i, args.bptt)
            if args.model == "Transformer":
                output = model(data)
                output = output.view(-1, ntokens)
            else:
                output, hidden = model(data, hidden)
                hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def train(model, train_data, args, ntokens, criterion, lr, epoch):
    model.train()
    total_loss = 0.
    start_time = time.time()
    if args.model != "Transformer":
        hidden = model.init_hidden(args.batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        data, targets = get_batch(train_data, i, args.bptt)
        model.zero_grad()
        if args.model == "Transformer":
            output = model(data)
            output = output.view(-1, ntokens)
        else:
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()

        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        for p in model.parameters():
            p.data = p.data.add(p.grad, alpha=-lr)

        total_loss += loss.item()
        if batch % args.log_interval == 0 and batch > 0:
            cur_loss = total_loss / args.log_interval
            elapsed = time.time() - start_time
            print("| epoch {:3d} | {:5d}/{:5d} batches | lr {:02.2f} | ms/batch {:5.2f} | loss {:5.2f} | ppl {:8.2f}"
                  .format(epoch, batch, len(train_data) // args.bptt, lr, elapsed * 1000 / args.log_interval,
                          cur_loss, math.exp(cur_loss)))
            total_loss = 0
            start_time = time.time()


def main(argv=None):
    parser = argparse.ArgumentParser(description="PyTorch Wikitext-2 RNN/LSTM/GRU/Transformer Language Model")
    parser.add_argument("--model", type=str, default="LSTM",
                        help="type of network (RNN_TANH, RNN_RELU, LSTM, GRU, Transformer)")
    parser.add_argument("--emsize", type=int, default=32, help="size of word embeddings")
    parser.add_argument("--nhid", type=int, default=32, help="number of hidden units per layer")
    parser.add_argument("--nlayers", type=int, default=2, help="number of layers")
    parser.add_argument("--lr", type=float, default=5, help="initial learning rate")
    parser.add_argument("--clip", type=float, default=0.25, help="gradient clipping")
    parser.add_argument("--epochs", type=int, default=3, help="upper epoch limit")
    parser.add_argument("--batch_size", type=int, default=4, metavar="N", help="batch size")
    parser.add_argument("--bptt", type=int, default=12, help="sequence length")
    parser.add_argument("--dropout", type=float, default=0.2, help="dropout applied to layers (0 = no dropout)")
    parser.add_argument("--tied", action="store_true", help="tie the word embedding and softmax weights")
    parser.add_argument("--seed", type=int, default=1111, help="random seed")
    parser.add_argument("--log-interval", type=int, default=10, metavar="N", help="report interval")
    parser.add_argument("--nhead", type=int, default=2,
                        help="the number of heads in the encoder/decoder of the transformer model")
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    device = torch.device("cpu")
    corpus = Corpus(TEXT)
    eval_batch_size = 2
    train_data = batchify(corpus.train, args.batch_size, device)
    val_data = batchify(corpus.valid, eval_batch_size, device)
    test_data = batchify(corpus.test, eval_batch_size, device)

    ntokens = len(corpus.dictionary)
    model = build_model(args, ntokens, device)
    criterion = nn.NLLLoss()

    lr = args.lr
    best_val_loss = None
    first_val_loss = evaluate(model, val_data, args, ntokens, criterion, eval_batch_size)
    for epoch in range(1, args.epochs + 1):
        epoch_start_time = time.time()
        train(model, train_data, args, ntokens, criterion, lr, epoch)
        val_loss = evaluate(model, val_data, args, ntokens, criterion, eval_batch_size)
        print("-" * 89)
        print("| end of epoch {:3d} | time: {:5.2f}s | valid loss {:5.2f} | valid ppl {:8.2f}"
              .format(epoch, (time.time() - epoch_start_time), val_loss, math.exp(val_loss)))
        print("-" * 89)
        if not best_val_loss or val_loss < best_val_loss:
            best_val_loss = val_loss
        else:
            lr /= 4.0
    test_loss = evaluate(model, test_data, args, ntokens, criterion, eval_batch_size)
    print("=" * 89)
    print("| End of training | test loss {:5.2f} | test ppl {:8.2f}".format(test_loss, math.exp(test_loss)))
    print("=" * 89)
    return first_val_loss, best_val_loss


if __name__ == "__main__":
    main()
