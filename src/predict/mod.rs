//! Time-axis predictors. Each predicts the next row (time step) of a tile's series
//! from what it has seen of earlier rows, in wrapping integer arithmetic on the mapped
//! bit patterns (as the MeerKAT predictive packer, Holt smoothing and ndzip do), so
//! decoding is exact everywhere.
//!
//! A predictor sees rows through [`RowPredictor::observe`] and fills a prediction row
//! with [`RowPredictor::predict`]. Before the first row it predicts zero; with fewer
//! rows seen than its order needs, it uses what it has (order 1 after one row).

pub mod flat;
mod predictor;
pub mod prefix_sum;
pub mod residual;
mod rows;

pub use predictor::Predictor;
pub use rows::RowPredictor;
