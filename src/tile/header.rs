//! The tile header: the two bytes that open every tile payload and record its coding,
//! `[predictor id | spatial head bit] [map id << 4 | coder id]`.

use crate::coder::Coder;
use crate::layout::Spatial;
use crate::predict::residual::ResidualMap;
use crate::predict::Predictor;
use crate::stream_error::StreamError;

/// Bytes of the per-tile header.
pub const TILE_HEADER_LEN: usize = 2;

/// One predictor / map / coder combination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Coding {
    /// Predictor along the time axis.
    pub predictor: Predictor,
    /// Residual map.
    pub map: ResidualMap,
    /// Residual coder.
    pub coder: Coder,
    /// The first row of each plane is predicted from its neighbour along the innermost
    /// element axis (as Lorenzo does) instead of from zero. Recorded as bit 7 of the
    /// predictor byte.
    pub spatial_head: bool,
}

impl Coding {
    /// The coding of a tile's words as they are, with `coder`: no predictor, the XOR map
    /// (a word's own bits), no spatial head.
    pub(super) fn raw(coder: Coder) -> Coding {
        Coding {
            predictor: Predictor::Zero,
            map: ResidualMap::Xor,
            coder,
            spatial_head: false,
        }
    }

    /// (Lorenzo's spatial term applies to predicted rows, rows without a time
    /// prediction are predicted spatially) for a chunk whose innermost axis is `spatial`:
    /// the one place encoder and decoder learn both.
    pub(super) fn spatial_rows(self, spatial: Spatial) -> (bool, bool) {
        let axis = spatial.stride > 0;
        let lorenzo = self.predictor == Predictor::Lorenzo && axis;
        (lorenzo, (lorenzo || self.spatial_head) && axis)
    }
}

/// Bit of the predictor byte that records [`Coding::spatial_head`].
const SPATIAL_HEAD_BIT: u8 = 0x80;

impl Coding {
    /// Appends the two header bytes that record the coding to `out`.
    pub fn write_header(self, out: &mut Vec<u8>) {
        let head = if self.spatial_head {
            SPATIAL_HEAD_BIT
        } else {
            0
        };
        out.push(self.predictor.id() | head);
        out.push(self.map.id() << 4 | self.coder.id());
    }
}

/// The coding a tile payload records, validated.
pub fn parse_coding(payload: &[u8]) -> Result<Coding, StreamError> {
    if payload.len() < TILE_HEADER_LEN {
        return Err(StreamError::NoTileHeader { len: payload.len() });
    }
    let unknown = |what, id| StreamError::UnknownId { what, id };
    let id = payload[0] & !SPATIAL_HEAD_BIT;
    let predictor = Predictor::from_id(id.into()).ok_or_else(|| unknown("predictor", id))?;
    let id = payload[1] >> 4;
    let map = ResidualMap::from_id(id.into()).ok_or_else(|| unknown("residual map", id))?;
    let id = payload[1] & 15;
    let coder = Coder::from_id(id.into()).ok_or_else(|| unknown("residual coder", id))?;
    Ok(Coding {
        predictor,
        map,
        coder,
        spatial_head: payload[0] & SPATIAL_HEAD_BIT != 0,
    })
}
