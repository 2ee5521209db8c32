//! The predictors along the time axis and their ids.

/// A predictor along the time axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Predictor {
    /// Lagrange extrapolation through the last `n` samples (1: previous sample,
    /// 2: parallelogram 2x[t-1] - x[t-2], 3: quadratic, 4: cubic).
    Lagrange(u8),
    /// Integer mean of the last `n` samples.
    Mean(u8),
    /// Median of the last `n` samples (lower median when fewer are available).
    Median(u8),
    /// Holt's double exponential smoothing with level gain 3/4 and trend gain 1/4,
    /// in fixed point with 8 fractional bits.
    Holt,
    /// ndzip's integer Lorenzo transform over time and the innermost element axis:
    /// x[t-1, c] + x[t, c-s] - x[t-1, c-s], previous sample at the edges.
    Lorenzo,
    /// No prediction: every row is coded as it is (with a spatial head, every row is
    /// predicted from its neighbour along the innermost element axis). For data with
    /// few distinct values (the value dictionary of Huffman value coding) or no time correlation.
    Zero,
}

impl Predictor {
    /// Every predictor, in id order.
    pub const ALL: [Predictor; 11] = [
        Predictor::Lagrange(1),
        Predictor::Lagrange(2),
        Predictor::Lagrange(3),
        Predictor::Lagrange(4),
        Predictor::Mean(2),
        Predictor::Mean(4),
        Predictor::Mean(8),
        Predictor::Median(3),
        Predictor::Median(5),
        Predictor::Holt,
        Predictor::Lorenzo,
    ];

    /// The previous time sample.
    pub const PREVIOUS: Predictor = Predictor::Lagrange(1);

    /// Id of [`Predictor::Zero`] (12 is cd_values' "auto").
    pub const ZERO_ID: u8 = 13;

    /// The predictor's id in cd_values and tile headers (1 to 11; 0 means default).
    pub fn id(self) -> u8 {
        match self {
            Predictor::Lagrange(n) => n,
            Predictor::Mean(2) => 5,
            Predictor::Mean(4) => 6,
            Predictor::Mean(_) => 7,
            Predictor::Median(3) => 8,
            Predictor::Median(_) => 9,
            Predictor::Holt => 10,
            Predictor::Lorenzo => 11,
            Predictor::Zero => Self::ZERO_ID,
        }
    }

    /// The predictor with id `id` (1 to 11, or 13 for [`Predictor::Zero`]).
    pub fn from_id(id: u32) -> Option<Predictor> {
        if id == u32::from(Self::ZERO_ID) {
            return Some(Predictor::Zero);
        }
        Predictor::ALL.into_iter().find(|p| u32::from(p.id()) == id)
    }

    /// Whether the predictor is one of karoo's: every value of [`Predictor::ALL`] and
    /// [`Predictor::Zero`], not an order or count they do not list (such as
    /// `Lagrange(5)`), which has no id and no arithmetic of its own.
    pub fn exists(self) -> bool {
        Predictor::from_id(self.id().into()) == Some(self)
    }

    /// A short name for tables and messages.
    pub fn name(self) -> String {
        match self {
            Predictor::Lagrange(1) => "previous".into(),
            Predictor::Lagrange(2) => "parallelogram".into(),
            Predictor::Lagrange(n) => format!("lagrange{n}"),
            Predictor::Mean(n) => format!("mean{n}"),
            Predictor::Median(n) => format!("median{n}"),
            Predictor::Holt => "holt".into(),
            Predictor::Lorenzo => "lorenzo".into(),
            Predictor::Zero => "none".into(),
        }
    }

    /// Earlier rows the predictor keeps.
    pub(crate) fn history(self) -> usize {
        match self {
            Predictor::Lagrange(n) | Predictor::Mean(n) | Predictor::Median(n) => n as usize,
            Predictor::Holt | Predictor::Lorenzo => 1,
            Predictor::Zero => 0,
        }
    }
}
