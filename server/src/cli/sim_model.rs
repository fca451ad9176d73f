//! The simulation's world, shared by `idem simulate`, its broker mode and
//! its worker processes: the key strategies, the conversations (what each
//! asks for, as a message on a queue) and the model stub. A leaf: it uses
//! no other `cli` module.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// How a worker makes its Idempotency-Key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// A random UUID per attempt.
    Random,
    /// The attempt's clock.
    Clock,
    /// A hash of the model's output.
    ModelHash,
    /// idem: record the intent first, charge with its key and frozen payload.
    Idem,
}

impl Strategy {
    /// The name `--strategies` and the report use.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Random => "random",
            Strategy::Clock => "clock",
            Strategy::ModelHash => "model-hash",
            Strategy::Idem => "idem",
        }
    }
}

/// What a conversation asks for.
#[derive(Debug, Clone)]
pub struct Truth {
    /// The conversation's business reference (`conv-<i>`).
    pub reference: String,
    /// The amount the customer agreed to.
    pub amount_cents: i64,
    /// The Pix key to charge.
    pub destination: String,
}

/// Conversation `i`'s request under `seed`.
pub fn truth(seed: u64, i: u32) -> Truth {
    let mut rng = StdRng::seed_from_u64(seed ^ (u64::from(i) << 20) ^ 0x5eed);
    Truth {
        reference: format!("conv-{i}"),
        amount_cents: rng.gen_range(1_000..500_000),
        destination: format!("cliente{i}@example.com"),
    }
}

/// What the model stub extracted on one attempt.
pub struct Extraction {
    /// The amount it read.
    pub amount_cents: i64,
    /// The Pix key it read.
    pub destination: String,
    /// Its words (what a model-hash key hashes).
    pub text: String,
}

const PHRASES: [&str; 4] = [
    "Cobrar {v} de {d}.",
    "Por favor, gere a cobrança de {v} para {d}.",
    "O cliente pediu: cobrança Pix de {v}, chave {d}.",
    "Cobrança de {v} (chave {d}) confirmada pelo cliente.",
];

/// The model stub: the first extraction (`attempt` 1) is right; a retried
/// one changes the amount or the key with chance `divergence`, and its
/// words vary with the attempt.
pub fn extract(t: &Truth, attempt: u32, rng: &mut StdRng, divergence: f64) -> Extraction {
    let (mut amount, mut dest) = (t.amount_cents, t.destination.clone());
    // The first extraction is right; a retried one sometimes is not.
    if attempt > 1 && rng.gen_bool(divergence) {
        if rng.gen_bool(0.5) {
            amount += 100 * rng.gen_range(1..50);
        } else {
            dest = format!("outro{}@example.com", rng.gen_range(0..1000));
        }
    }
    let phrase = PHRASES[(attempt as usize - 1) % PHRASES.len()];
    let text = phrase
        .replace("{v}", &format!("R$ {},{:02}", amount / 100, amount % 100))
        .replace("{d}", &dest);
    Extraction {
        amount_cents: amount,
        destination: dest,
        text,
    }
}

/// One conversation message on a broker queue (JSON body).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Message {
    /// The message's number in its queue (copies have their own).
    pub seq: u64,
    /// The conversation's number.
    pub conversation: u32,
    /// Its business reference (also the AMQP `message_id`).
    pub reference: String,
    /// The amount the customer agreed to.
    pub amount_cents: i64,
    /// The Pix key to charge.
    pub destination: String,
    /// A producer retry's copy. Only the model stub reads it (the
    /// conversation was seen before, so a retried extraction may differ);
    /// a consumer must not need it.
    #[serde(default)]
    pub retry: bool,
}
