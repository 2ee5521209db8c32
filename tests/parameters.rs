//! Parameters: invalid ones are refused by `compress` with a clear error, and whatever
//! `compress` accepts decodes to its input.

use karoo::{
    compress, decompress, Coder, ElementKind, Error, Mode, Params, Predictor, ResidualMap,
    MAX_THREADS,
};
use proptest::prelude::*;

#[test]
fn bad_parameters_give_clear_errors() {
    let data = vec![0u8; 24];
    let msg = |p: Params| compress(&data, &p).unwrap_err().to_string();
    assert_eq!(
        msg(Params::new(3, &[8])),
        "karoo: invalid parameters: word size 3 is not 1, 2, 4 or 8"
    );
    assert_eq!(
        msg(Params::new(4, &[5])),
        "karoo: invalid parameters: shape [5] holds 5 words but the buffer holds 6"
    );
    assert_eq!(
        msg(Params {
            time_axis: 2,
            ..Params::new(4, &[2, 3])
        }),
        "karoo: invalid parameters: time axis 2 is out of range for rank 2"
    );
    assert_eq!(
        msg(Params {
            threads: 1_000_000_000,
            ..Params::new(4, &[6])
        }),
        "karoo: invalid parameters: 1000000000 threads requested, at most 1024 allowed"
    );
    assert_eq!(
        msg(Params {
            level: 10,
            ..Params::new(4, &[6])
        }),
        "karoo: invalid parameters: level 10 is not 0 (the default) or 1 (fastest) to 9 (smallest)"
    );
}

/// Predictor values the enum can hold but karoo has no id or arithmetic for: refused,
/// not coded into chunks that never decode.
#[test]
fn predictors_karoo_does_not_have_are_refused() {
    let data = vec![0u8; 64];
    for p in [
        Predictor::Lagrange(0),
        Predictor::Lagrange(5),
        Predictor::Lagrange(255),
        Predictor::Mean(0),
        Predictor::Mean(3),
        Predictor::Mean(16),
        Predictor::Median(1),
        Predictor::Median(4),
        Predictor::Median(7),
    ] {
        let params = Params {
            predictor: Some(p),
            ..Params::new(4, &[4, 4])
        };
        assert_eq!(
            compress(&data, &params).unwrap_err().to_string(),
            format!(
                "karoo: invalid parameters: predictor {p:?} does not exist (there are \
                 Lagrange(1 to 4), Mean(2, 4 or 8), Median(3 or 5), Holt, Lorenzo and Zero)"
            )
        );
        assert!(!p.exists());
    }
    for p in Predictor::ALL.into_iter().chain([Predictor::Zero]) {
        assert!(p.exists(), "{p:?}");
        let params = Params {
            predictor: Some(p),
            ..Params::new(4, &[4, 4])
        };
        assert_eq!(
            decompress(&compress(&data, &params).unwrap()).unwrap(),
            data
        );
    }
}

/// Any value of every public parameter type: the predictor's order or count and every
/// field of `Params` drawn from ranges wider than the valid ones.
fn any_predictor() -> impl Strategy<Value = Predictor> {
    prop_oneof![
        any::<u8>().prop_map(Predictor::Lagrange),
        any::<u8>().prop_map(Predictor::Mean),
        any::<u8>().prop_map(Predictor::Median),
        Just(Predictor::Holt),
        Just(Predictor::Lorenzo),
        Just(Predictor::Zero),
        prop::sample::select(Predictor::ALL.to_vec()),
    ]
}

fn any_params() -> impl Strategy<Value = Params> {
    (
        (
            prop::sample::select(vec![0usize, 1, 2, 3, 4, 5, 8, 16]),
            prop::collection::vec(0usize..7, 0..4),
            0usize..5,
            0usize..40,
        ),
        (
            prop::option::of(any_predictor()),
            prop::option::of(prop::sample::select(ResidualMap::ALL.to_vec())),
            prop::option::of(prop::sample::select(Coder::ALL.to_vec())),
        ),
        (
            prop::sample::select(vec![
                ElementKind::Float,
                ElementKind::Integer,
                ElementKind::Other,
            ]),
            0usize..4,
            prop::sample::select(vec![0usize, 1, 2, 3, MAX_THREADS + 1]),
            prop::sample::select(vec![Mode::Fast, Mode::Archive]),
        ),
    )
        .prop_map(
            |(
                (word_size, shape, time_axis, lag),
                (predictor, residual_map, coder),
                (element, components, threads, mode),
            )| Params {
                word_size,
                shape,
                time_axis,
                lag,
                predictor,
                residual_map,
                coder,
                element,
                components,
                threads,
                mode,
                element_type: Default::default(),
                level: 0,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    /// Whatever `compress` accepts decodes to its input; what it refuses is refused
    /// with an invalid-parameters error, and a predictor karoo does not have always is.
    #[test]
    fn whatever_compress_accepts_decodes_to_its_input(
        params in any_params(),
        extra_words in 0usize..3,
        bytes in prop::collection::vec(any::<u8>(), 1..512),
    ) {
        let words: usize = if params.shape.is_empty() {
            bytes.len() % 97
        } else {
            params.shape.iter().product::<usize>() + extra_words * usize::from(bytes[0] & 1)
        };
        let len = words * params.word_size.max(1);
        let data: Vec<u8> = bytes.iter().cycle().take(len).copied().collect();
        match compress(&data, &params) {
            Ok(packed) => {
                prop_assert!(params.predictor.is_none_or(Predictor::exists));
                prop_assert_eq!(decompress(&packed).unwrap(), data, "{:?}", params);
            }
            Err(e) => prop_assert!(matches!(e, Error::InvalidParams(_)), "{e}"),
        }
    }
}
