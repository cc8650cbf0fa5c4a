#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes the small tokenizer fixtures in tests/data/tokenizers/, built only from text this script
generates itself (no shared or third-party data), so they can be committed:

  wordpiece.json   BERT-style tokenizer.json (BertNormalizer, BertPreTokenizer, WordPiece, template
                   post-processor "[CLS] $A [SEP]" / "[CLS] $A [SEP] $B [SEP]", WordPiece decoder)
  wordlevel.json   WordLevel over Sequence[NFD, Lowercase, StripAccents] and
                   Sequence[WhitespaceSplit, Punctuation, Digits(individual)]
  unigram.model    SentencePiece unigram model trained here with spm_train (nmt_nfkc, no byte fallback)
  unigram.json     the tokenizer.json Hugging Face's SentencePiece converter writes for such a model
                   (T5 style: Precompiled + Replace, Metaspace, Unigram, "$A </s>" template)
  spm_bpe.model    SentencePiece BPE model with byte fallback, for the libsentencepiece check only

Needs Debian's sentencepiece command-line tools (apt-get install sentencepiece: spm_train) and
nothing else; the .model protobuf is read by hand (wire format), so no sentencepiece Python module.
Run from the repository root:

  /usr/bin/python3 scripts/make-tokenizer-fixtures.py

The output is deterministic (fixed random seeds, one training thread): running it again rewrites
identical files. The reference vectors that go with these fixtures come from
scripts/gen-tokenizer-reference.js (run it after this script)."""
import base64
import collections
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import unicodedata

OUT = os.path.join('tests', 'data', 'tokenizers')

# ----------------------------------------------------------------------------------------------
# Training corpus: our own sentences, generated from small hand-written word lists and templates.
# ----------------------------------------------------------------------------------------------

EN_FIXED = [
    "The quick brown fox jumps over the lazy dog.",
    "She sells sea shells by the sea shore, doesn't she?",
    "It's 3:45 p.m. and the train hasn't arrived yet.",
    "Please call me back at 555-0134 before Friday.",
    "We're going to need a bigger boat!",
    "The recipe asks for 2.5 cups of flour and 1/2 teaspoon of salt.",
    "He said: \"I'll be there in 10 minutes.\"",
    "Don't forget to water the plants while I'm away.",
    "The meeting was moved from Tuesday to Thursday (again).",
    "Our café serves crème brûlée and a naïve little soufflé.",
    "The résumé was sent to the hiring manager on 2023-04-17.",
    "Temperatures will reach 31°C in the afternoon.",
    "Is this the real life? Is this just fantasy?",
    "Tokenizers split text into pieces; models read the pieces.",
    "The library opens at 9 a.m. and closes at 8 p.m. on weekdays.",
    "They've painted the fence white, haven't they?",
    "A dozen eggs cost $3.99 at the corner shop.",
    "Wait... what did you just say?!",
    "The parcel weighs 1,250 grams, give or take.",
    "My e-mail address is someone@example.org, write any time.",
    "Visit https://example.com/docs for the full manual.",
    "Learning a language takes patience, practice, and a bit of humour.",
    "The children built a snowman with a carrot nose.",
    "In 1969, astronauts walked on the Moon for the first time.",
    "Attention is all you need, or so the paper claims.",
    "Numbers like 42, 1000000 and 3.14159 appear everywhere.",
    "The old lighthouse keeper climbed 137 steps every evening.",
    "Could you pass the salt, please?",
    "The museum's new wing displays art from the 19th century.",
    "I can't believe it's already December!",
]

FR_FIXED = [
    "Le vieux château domine la vallée depuis le XIIe siècle.",
    "Où est la gare, s'il vous plaît ?",
    "Nous avons mangé une crêpe au café près de l'église.",
    "C'est déjà l'été : les enfants jouent dans le jardin.",
    "Il fait 25 degrés à Marseille et il pleut à Lille.",
    "J'ai acheté trois baguettes et un croissant pour 4,50 €.",
    "La réunion commence à 14 h 30, ne soyez pas en retard !",
    "Elle préfère le thé à la menthe au café noir.",
    "Les élèves révisent leurs leçons avant l'examen.",
    "« Bonjour », dit-il en ôtant son chapeau.",
    "Le garçon a reçu une lettre de sa sœur aînée.",
    "Qu'est-ce que tu fais ce week-end ?",
    "Les forêts de Normandie sont magnifiques en automne.",
    "Ça coûte combien, ce livre d'occasion ?",
    "Noël approche et les vitrines brillent de mille feux.",
]

DE_FIXED = [
    "Die Straße vor unserem Haus wird nächste Woche gesperrt.",
    "Ich hätte gern zwei Brötchen und einen Kaffee, bitte.",
    "Der Zug nach München fährt um 7:15 Uhr ab.",
    "Über den Wolken muss die Freiheit wohl grenzenlos sein.",
    "Wir treffen uns am Samstag im Biergarten.",
    "Das Mädchen liest ein Buch über Schmetterlinge.",
    "Die Größe des Gebäudes beträgt 1.200 Quadratmeter.",
    "Könnten Sie mir bitte den Weg zum Bahnhof zeigen?",
    "Grüße aus Köln und schöne Feiertage!",
    "Der Bäcker öffnet seinen Laden schon um fünf Uhr morgens.",
    "Fußball ist in Deutschland sehr beliebt.",
    "Das Wetter ist heute äußerst wechselhaft.",
    "Mein Großvater erzählt gern Geschichten von früher.",
    "Die Prüfung dauert genau 90 Minuten.",
    "Schließlich fanden wir den Schlüssel unter der Fußmatte.",
]

CJK_FIXED = [
    "今天天气很好，我们去公园散步吧。",
    "我喜欢喝茶，也喜欢看书。",
    "这本书一共有三百页。",
    "他每天早上七点起床。",
    "中文分词是一个有趣的问题。",
    "北京是中国的首都。",
    "我们明天一起吃饭好吗？",
    "学习语言需要时间和耐心。",
    "日本語のテキストを読みます。",
    "東京は大きな都市です。",
    "私は毎朝コーヒーを飲みます。",
    "今日はとても暑いですね。",
    "このパンはおいしいです。",
    "電車は九時に出発します。",
    "한국어 텍스트를 읽습니다.",
    "오늘 날씨가 정말 좋네요.",
    "저는 학생입니다.",
    "서울은 아름다운 도시입니다.",
    "감사합니다, 또 만나요!",
]

EN = {
    'subj': ["The teacher", "My neighbour", "A small dog", "The old man", "Our team", "The pilot",
             "Every student", "The baker", "His sister", "The committee", "A tired traveller",
             "The engineer", "Nobody", "The gardener", "Their cat", "The new manager"],
    'verb': ["found", "painted", "wrote", "carried", "repaired", "forgot", "discovered",
             "ordered", "cleaned", "described", "borrowed", "returned", "visited", "opened",
             "counted", "photographed"],
    'obj': ["the red bicycle", "three letters", "a broken window", "the kitchen table",
            "an interesting book", "the final report", "two large boxes", "the garden gate",
            "a strange message", "the wooden bridge", "several old maps", "the blue umbrella",
            "a cup of coffee", "the train tickets", "the missing keys", "a long story"],
    'when': ["yesterday", "last week", "this morning", "on Monday", "before dinner",
             "after the storm", "in the evening", "at noon", "during the holidays",
             "every Sunday", "in 2019", "two days ago"],
    'where': ["in the park", "at the station", "near the river", "in London", "at school",
              "behind the house", "in the office", "on the beach", "at the market",
              "in the mountains"],
    'adj': ["happy", "quiet", "careful", "surprised", "hungry", "brave", "curious", "busy",
            "nervous", "friendly"],
}

FR = {
    'subj': ["Le professeur", "Ma voisine", "Un petit chien", "Le vieil homme", "Notre équipe",
             "Le boulanger", "Chaque élève", "Sa sœur", "Le médecin", "Une étudiante",
             "Le facteur", "Mon frère"],
    'verb': ["a trouvé", "a peint", "a écrit", "a réparé", "a oublié", "a découvert",
             "a commandé", "a nettoyé", "a emprunté", "a rendu", "a ouvert", "a photographié"],
    'obj': ["la bicyclette rouge", "trois lettres", "une fenêtre cassée", "la table de cuisine",
            "un livre intéressant", "le rapport final", "deux grandes boîtes", "la porte du jardin",
            "un message étrange", "le pont en bois", "un parapluie bleu", "les clés perdues"],
    'when': ["hier", "la semaine dernière", "ce matin", "lundi", "avant le dîner",
             "après l'orage", "le soir", "à midi", "pendant les vacances", "en 2018"],
    'where': ["au parc", "à la gare", "près de la rivière", "à Paris", "à l'école",
              "derrière la maison", "au bureau", "sur la plage", "au marché", "à la montagne"],
    'adj': ["heureux", "calme", "prudent", "surpris", "fatigué", "curieux", "occupé", "généreux"],
}

DE = {
    'subj': ["Der Lehrer", "Meine Nachbarin", "Ein kleiner Hund", "Der alte Mann", "Unser Team",
             "Der Bäcker", "Jeder Schüler", "Seine Schwester", "Die Ärztin", "Ein Student",
             "Der Briefträger", "Mein Bruder"],
    'verb': ["fand", "malte", "schrieb", "reparierte", "vergaß", "entdeckte", "bestellte",
             "putzte", "lieh", "öffnete", "zählte", "fotografierte"],
    'obj': ["das rote Fahrrad", "drei Briefe", "ein kaputtes Fenster", "den Küchentisch",
            "ein spannendes Buch", "den Abschlussbericht", "zwei große Kisten", "das Gartentor",
            "eine seltsame Nachricht", "die hölzerne Brücke", "einen blauen Regenschirm",
            "die verlorenen Schlüssel"],
    'when': ["gestern", "letzte Woche", "heute Morgen", "am Montag", "vor dem Abendessen",
             "nach dem Gewitter", "am Abend", "um Mittag", "in den Ferien", "im Jahr 2020"],
    'where': ["im Park", "am Bahnhof", "am Fluss", "in Berlin", "in der Schule",
              "hinter dem Haus", "im Büro", "am Strand", "auf dem Markt", "in den Bergen"],
    'adj': ["glücklich", "ruhig", "vorsichtig", "überrascht", "müde", "neugierig", "beschäftigt",
            "freundlich"],
}


def number(rng):
    kind = rng.randrange(6)
    if kind == 0:
        return str(rng.randrange(1, 100))
    if kind == 1:
        return str(rng.randrange(100, 100000))
    if kind == 2:
        return '%d.%02d' % (rng.randrange(0, 1000), rng.randrange(100))
    if kind == 3:
        return '{:,}'.format(rng.randrange(1000, 10000000))
    if kind == 4:
        return '%d%%' % rng.randrange(1, 100)
    return '%04d-%02d-%02d' % (rng.randrange(1990, 2030), rng.randrange(1, 13), rng.randrange(1, 29))


def en_sentence(rng):
    w = {k: rng.choice(v) for k, v in EN.items()}
    n = number(rng)
    forms = [
        "{subj} {verb} {obj} {where} {when}.",
        "{when}, {subj_l} {verb} {obj}.",
        "Why was {subj_l} so {adj} {when}?",
        "{subj} {verb} {obj} and felt {adj}!",
        "\"{subj} {verb} {obj},\" she said.",
        "{subj} counted {n} birds {where}.",
        "The price went up by {n} {when}; {subj_l} wasn't {adj}.",
        "{subj} {verb} {obj} {where} - nobody knows why.",
        "Did {subj_l} really say it's {adj}? I don't think so.",
        "{subj} (who was {adj}) {verb} {obj}.",
    ]
    return rng.choice(forms).format(subj_l=w['subj'][0].lower() + w['subj'][1:], n=n, **w)


def fr_sentence(rng):
    w = {k: rng.choice(v) for k, v in FR.items()}
    n = number(rng).replace('.', ',')
    forms = [
        "{subj} {verb} {obj} {where} {when}.",
        "{when}, {subj_l} {verb} {obj}.",
        "Pourquoi {subj_l} était-il si {adj} {when} ?",
        "{subj} {verb} {obj} et s'est senti {adj} !",
        "« {subj} {verb} {obj} », a-t-elle dit.",
        "{subj} a compté {n} oiseaux {where}.",
        "Le prix a augmenté de {n} {when} ; ce n'est pas idéal.",
        "{subj} {verb} {obj} {where}, c'est sûr.",
    ]
    return rng.choice(forms).format(subj_l=w['subj'][0].lower() + w['subj'][1:], n=n, **w)


def de_sentence(rng):
    w = {k: rng.choice(v) for k, v in DE.items()}
    n = number(rng).replace(',', '.')
    forms = [
        "{subj} {verb} {when} {obj} {where}.",
        "{when} {verb} {subj_l} {obj}.",
        "Warum war {subj_l} {when} so {adj}?",
        "{subj} {verb} {obj} und war danach {adj}!",
        "„{subj} {verb} {obj}“, sagte sie.",
        "{subj} zählte {n} Vögel {where}.",
        "Der Preis stieg {when} um {n}; das ist nicht gut.",
        "{subj} {verb} {obj} {where} – niemand weiß, warum.",
    ]
    subj_l = w['subj'][0].lower() + w['subj'][1:]
    return rng.choice(forms).format(subj_l=subj_l, n=n, **w)


def make_corpus():
    rng = random.Random(20240611)
    lines = list(EN_FIXED) + list(FR_FIXED) + list(DE_FIXED) + list(CJK_FIXED)
    for _ in range(260):
        lines.append(en_sentence(rng))
    for _ in range(170):
        lines.append(fr_sentence(rng))
    for _ in range(170):
        lines.append(de_sentence(rng))
    # The CJK lines a few times more, so SentencePiece sees them as frequent enough to learn.
    lines += CJK_FIXED * 2
    rng.shuffle(lines)
    return lines


# ----------------------------------------------------------------------------------------------
# Hugging Face normalisation / pre-tokenisation, re-done in Python only to choose vocabularies.
# (The vocabulary choice need not match HF exactly; the reference vectors come from HF itself.)
# ----------------------------------------------------------------------------------------------

def is_chinese_char(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B920 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def is_punct(c):
    return (c.isascii() and not c.isalnum() and c.isprintable() and not c.isspace()) \
        or unicodedata.category(c).startswith('P')


def bert_normalize(text):
    out = []
    for c in text:
        cp = ord(c)
        if cp == 0 or cp == 0xFFFD or (unicodedata.category(c).startswith('C') and c not in '\t\n\r'):
            continue
        if c.isspace():
            out.append(' ')
        elif is_chinese_char(cp):
            out.append(' ' + c + ' ')
        else:
            out.append(c)
    s = unicodedata.normalize('NFD', ''.join(out))
    s = ''.join(c for c in s if unicodedata.category(c) != 'Mn')
    return s.lower()


def split_punct(words):
    out = []
    for w in words:
        cur = ''
        for c in w:
            if is_punct(c):
                if cur:
                    out.append(cur)
                out.append(c)
                cur = ''
            else:
                cur += c
        if cur:
            out.append(cur)
    return out


def bert_words(text):
    return split_punct(bert_normalize(text).split())


def wordlevel_words(text):
    s = unicodedata.normalize('NFD', text).lower()
    s = ''.join(c for c in s if unicodedata.category(c) != 'Mn')
    out = []
    for w in split_punct(s.split()):
        cur = ''
        for c in w:
            if c.isdigit():
                if cur:
                    out.append(cur)
                out.append(c)
                cur = ''
            else:
                cur += c
        if cur:
            out.append(cur)
    return out


def added(id_, content):
    return {'id': id_, 'content': content, 'single_word': False, 'lstrip': False, 'rstrip': False,
            'normalized': False, 'special': True}


def tokenizer_json(added_tokens, normalizer, pre_tokenizer, post_processor, decoder, model):
    # Key order as Hugging Face's serializer writes it.
    return collections.OrderedDict([
        ('version', '1.0'), ('truncation', None), ('padding', None),
        ('added_tokens', added_tokens), ('normalizer', normalizer),
        ('pre_tokenizer', pre_tokenizer), ('post_processor', post_processor),
        ('decoder', decoder), ('model', model)])


def write_json(name, obj):
    path = os.path.join(OUT, name)
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(obj, f, ensure_ascii=False, indent=2)
        f.write('\n')
    print('wrote %s (%d bytes)' % (path, os.path.getsize(path)))


# ----------------------------------------------------------------------------------------------
# a. WordPiece (BERT-style)
# ----------------------------------------------------------------------------------------------

WP_SIZE = 1000
WP_SUFFIXES = 220


def make_wordpiece(corpus):
    specials = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']
    freq = collections.Counter()
    for line in corpus:
        freq.update(bert_words(line))
    vocab = list(specials)
    seen = set(vocab)

    def add(tok):
        if tok not in seen:
            seen.add(tok)
            vocab.append(tok)

    chars = sorted({c for w in freq for c in w})
    for c in chars:
        add(c)
    for c in chars:
        if not is_punct(c) and not is_chinese_char(ord(c)):
            add('##' + c)
    # Frequent ##suffixes (weighted by word frequency), then frequent whole words.
    suffix = collections.Counter()
    for w, n in freq.items():
        if is_punct(w[0]) or is_chinese_char(ord(w[0])):
            continue
        for k in range(2, 7):
            if len(w) > k + 1:
                suffix[w[-k:]] += n
    suffixes = [s for s, _ in sorted(suffix.items(), key=lambda kv: (-kv[1], kv[0]))[:WP_SUFFIXES]]
    words = [w for w, _ in sorted(freq.items(), key=lambda kv: (-kv[1], kv[0])) if len(w) > 1]
    budget = WP_SIZE - len(vocab) - len(suffixes)
    for w in words[:budget]:
        add(w)
    for s in suffixes:
        add('##' + s)
    ids = {t: i for i, t in enumerate(vocab)}

    def st(tok, type_id):
        return {'SpecialToken': {'id': tok, 'type_id': type_id}}

    def seq(s, type_id):
        return {'Sequence': {'id': s, 'type_id': type_id}}

    post = collections.OrderedDict([
        ('type', 'TemplateProcessing'),
        ('single', [st('[CLS]', 0), seq('A', 0), st('[SEP]', 0)]),
        ('pair', [st('[CLS]', 0), seq('A', 0), st('[SEP]', 0), seq('B', 1), st('[SEP]', 1)]),
        ('special_tokens', collections.OrderedDict(
            (t, {'id': t, 'ids': [ids[t]], 'tokens': [t]}) for t in ['[CLS]', '[SEP]'])),
    ])
    tok = tokenizer_json(
        [added(ids[t], t) for t in specials],
        collections.OrderedDict([('type', 'BertNormalizer'), ('clean_text', True),
                                 ('handle_chinese_chars', True), ('strip_accents', None),
                                 ('lowercase', True)]),
        {'type': 'BertPreTokenizer'},
        post,
        collections.OrderedDict([('type', 'WordPiece'), ('prefix', '##'), ('cleanup', True)]),
        collections.OrderedDict([('type', 'WordPiece'), ('unk_token', '[UNK]'),
                                 ('continuing_subword_prefix', '##'),
                                 ('max_input_chars_per_word', 100),
                                 ('vocab', collections.OrderedDict((t, i) for i, t in enumerate(vocab)))]))
    write_json('wordpiece.json', tok)
    return len(vocab)


# ----------------------------------------------------------------------------------------------
# b. WordLevel
# ----------------------------------------------------------------------------------------------

WL_WORDS = 300


def make_wordlevel(corpus):
    freq = collections.Counter()
    for line in corpus:
        freq.update(wordlevel_words(line))
    vocab = ['[UNK]']
    for w, _ in sorted(freq.items(), key=lambda kv: (-kv[1], kv[0]))[:WL_WORDS]:
        vocab.append(w)
    for d in '0123456789':  # every digit, whatever the corpus had
        if d not in vocab:
            vocab.append(d)
    tok = tokenizer_json(
        [added(0, '[UNK]')],
        {'type': 'Sequence', 'normalizers': [{'type': 'NFD'}, {'type': 'Lowercase'},
                                             {'type': 'StripAccents'}]},
        {'type': 'Sequence', 'pretokenizers': [
            {'type': 'WhitespaceSplit'},
            {'type': 'Punctuation', 'behavior': 'Isolated'},
            {'type': 'Digits', 'individual_digits': True}]},
        None,
        None,
        collections.OrderedDict([('type', 'WordLevel'),
                                 ('vocab', collections.OrderedDict((t, i) for i, t in enumerate(vocab))),
                                 ('unk_token', '[UNK]')]))
    write_json('wordlevel.json', tok)
    return len(vocab)


# ----------------------------------------------------------------------------------------------
# c./d. SentencePiece models and the Unigram tokenizer.json
# ----------------------------------------------------------------------------------------------

def read_varint(buf, pos):
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def fields(buf):
    """Yields (field number, wire type, value) for one protobuf message; value is an int for
    varints, bytes for length-delimited and fixed-width fields."""
    pos = 0
    while pos < len(buf):
        key, pos = read_varint(buf, pos)
        num, wt = key >> 3, key & 7
        if wt == 0:
            val, pos = read_varint(buf, pos)
        elif wt == 1:
            val, pos = buf[pos:pos + 8], pos + 8
        elif wt == 2:
            n, pos = read_varint(buf, pos)
            val, pos = buf[pos:pos + n], pos + n
        elif wt == 5:
            val, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError('unsupported wire type %d' % wt)
        yield num, wt, val


NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def parse_model(data):
    """ModelProto: 1 = repeated SentencePiece {1 piece, 2 score, 3 type}, 3 = NormalizerSpec
    {1 name, 2 precompiled_charsmap, 3 add_dummy_prefix, 4 remove_extra_whitespaces,
    5 escape_whitespaces}."""
    pieces = []
    norm = {'name': '', 'charsmap': b'', 'add_dummy_prefix': True,
            'remove_extra_whitespaces': True, 'escape_whitespaces': True}
    for num, wt, val in fields(data):
        if num == 1 and wt == 2:
            piece, score, typ = '', 0.0, NORMAL
            for n2, w2, v2 in fields(val):
                if n2 == 1:
                    piece = v2.decode('utf-8')
                elif n2 == 2 and w2 == 5:
                    score = struct.unpack('<f', v2)[0]
                elif n2 == 3:
                    typ = v2
            pieces.append((piece, score, typ))
        elif num == 3 and wt == 2:
            for n2, w2, v2 in fields(val):
                if n2 == 1:
                    norm['name'] = v2.decode('utf-8')
                elif n2 == 2:
                    norm['charsmap'] = bytes(v2)
                elif n2 == 3:
                    norm['add_dummy_prefix'] = bool(v2)
                elif n2 == 4:
                    norm['remove_extra_whitespaces'] = bool(v2)
                elif n2 == 5:
                    norm['escape_whitespaces'] = bool(v2)
    return pieces, norm


def spm_train(tmp, corpus_name, prefix, args):
    cmd = ['spm_train', '--input=' + corpus_name, '--model_prefix=' + prefix,
           '--num_threads=1', '--random_seed=1234', '--minloglevel=1'] + args
    # Relative paths only: the trainer spec stored inside the model records them, and absolute
    # temporary paths would make every run's file different.
    subprocess.run(cmd, cwd=tmp, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(tmp, prefix + '.model'), 'rb') as f:
        return f.read()


def make_unigram(tmp):
    data = spm_train(tmp, 'corpus.txt', 'unigram', [
        '--model_type=unigram', '--vocab_size=800', '--normalization_rule_name=nmt_nfkc',
        '--character_coverage=1.0', '--byte_fallback=false'])
    with open(os.path.join(OUT, 'unigram.model'), 'wb') as f:
        f.write(data)
    print('wrote %s (%d bytes)' % (os.path.join(OUT, 'unigram.model'), len(data)))
    pieces, norm = parse_model(data)
    assert norm['name'] == 'nmt_nfkc' and norm['charsmap'], norm['name']
    assert norm['add_dummy_prefix'] and norm['remove_extra_whitespaces'] and norm['escape_whitespaces']
    unk_ids = [i for i, p in enumerate(pieces) if p[2] == UNKNOWN]
    assert len(unk_ids) == 1, unk_ids
    ids = {p[0]: i for i, p in enumerate(pieces)}
    eos = ids['</s>']
    assert pieces[eos][2] == CONTROL
    # As Hugging Face's converter does: every piece with its score, in model order; the special
    # pieces (unknown, control) become added tokens so their literal text maps to them.
    specials = [i for i, p in enumerate(pieces) if p[2] in (UNKNOWN, CONTROL)]
    metaspace = collections.OrderedDict([('type', 'Metaspace'), ('replacement', '\u2581'),
                                         ('prepend_scheme', 'always'), ('split', True)])
    tok = tokenizer_json(
        [added(i, pieces[i][0]) for i in specials],
        {'type': 'Sequence', 'normalizers': [
            {'type': 'Precompiled',
             'precompiled_charsmap': base64.b64encode(norm['charsmap']).decode('ascii')},
            {'type': 'Replace', 'pattern': {'Regex': ' {2,}'}, 'content': ' '}]},
        metaspace,
        collections.OrderedDict([
            ('type', 'TemplateProcessing'),
            ('single', [{'Sequence': {'id': 'A', 'type_id': 0}},
                        {'SpecialToken': {'id': '</s>', 'type_id': 0}}]),
            # T5's converter: "$A </s> $B </s>", every type id 0.
            ('pair', [{'Sequence': {'id': 'A', 'type_id': 0}},
                      {'SpecialToken': {'id': '</s>', 'type_id': 0}},
                      {'Sequence': {'id': 'B', 'type_id': 0}},
                      {'SpecialToken': {'id': '</s>', 'type_id': 0}}]),
            ('special_tokens', {'</s>': {'id': '</s>', 'ids': [eos], 'tokens': ['</s>']}}),
        ]),
        dict(metaspace),
        collections.OrderedDict([('type', 'Unigram'), ('unk_id', unk_ids[0]),
                                 ('vocab', [[p[0], p[1]] for p in pieces]),
                                 ('byte_fallback', False)]))
    write_json('unigram.json', tok)
    return len(pieces)


def make_spm_bpe(tmp):
    data = spm_train(tmp, 'corpus.txt', 'spm_bpe', [
        '--model_type=bpe', '--vocab_size=600', '--normalization_rule_name=nmt_nfkc',
        '--character_coverage=0.9995', '--byte_fallback=true'])
    with open(os.path.join(OUT, 'spm_bpe.model'), 'wb') as f:
        f.write(data)
    print('wrote %s (%d bytes)' % (os.path.join(OUT, 'spm_bpe.model'), len(data)))
    pieces, _ = parse_model(data)
    nbytes = sum(1 for p in pieces if p[2] == BYTE)
    assert nbytes == 256, nbytes
    return len(pieces)


def main():
    if not os.path.isdir(os.path.join('tests', 'data')):
        sys.exit('run from the repository root')
    if shutil.which('spm_train') is None:
        sys.exit('spm_train not found (apt-get install sentencepiece)')
    os.makedirs(OUT, exist_ok=True)
    corpus = make_corpus()
    print('corpus: %d sentences, %d distinct characters' % (
        len(corpus), len({c for line in corpus for c in line})))
    print('wordpiece vocab: %d' % make_wordpiece(corpus))
    print('wordlevel vocab: %d' % make_wordlevel(corpus))
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, 'corpus.txt'), 'w', encoding='utf-8') as f:
            f.write('\n'.join(corpus) + '\n')
        print('unigram pieces: %d' % make_unigram(tmp))
        print('spm bpe pieces: %d' % make_spm_bpe(tmp))


if __name__ == '__main__':
    main()
