//! The element type a chunk records (format version 3): what its words are, so that a
//! typed reader (numcodecs, `karoo.decompress`) returns the array it was given without
//! being told its type. Decoding bytes never depends on it. The byte's layout is
//! specified in docs/format.md ("Element type").

/// What kind of numbers a chunk's elements are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TypeKind {
    /// Not recorded: the chunk decodes to bytes of no stated type.
    #[default]
    Unknown,
    /// Booleans of one byte.
    Bool,
    /// Unsigned integers of one word.
    Unsigned,
    /// Two's-complement signed integers of one word.
    Signed,
    /// IEEE 754 binary floating point of one word.
    Float,
    /// Complex numbers: two float words (real, imaginary), the shape's last axis.
    Complex,
}

impl TypeKind {
    /// Every kind, in id order.
    pub const ALL: [TypeKind; 6] = [
        TypeKind::Unknown,
        TypeKind::Bool,
        TypeKind::Unsigned,
        TypeKind::Signed,
        TypeKind::Float,
        TypeKind::Complex,
    ];

    /// The kind's number in the element type byte (bits 0-3).
    pub fn id(self) -> u8 {
        match self {
            TypeKind::Unknown => 0,
            TypeKind::Bool => 1,
            TypeKind::Unsigned => 2,
            TypeKind::Signed => 3,
            TypeKind::Float => 4,
            TypeKind::Complex => 5,
        }
    }
}

/// Bit 4 of the element type byte: the array was in Fortran order; the recorded shape is
/// its shape reversed (its transpose, in C order, is what the chunk codes).
const FORTRAN: u8 = 0x10;
/// Bit 6 of the element type byte: the array has no axes (a 0-d array of one element).
const SCALAR: u8 = 0x40;
/// Bit 7 of the element type byte: the words are big-endian numbers.
const BIG_ENDIAN: u8 = 0x80;
/// Bits 0-3: the kind.
const KIND_MASK: u8 = 0x0f;

/// The element type a chunk records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ElementType {
    /// What kind of numbers the elements are.
    pub kind: TypeKind,
    /// The words hold big-endian numbers (the codec codes them as little-endian words
    /// all the same).
    pub big_endian: bool,
    /// The array has rank 0 (its one element recorded with shape `[1]`, or `[1, 2]` for a
    /// complex number).
    pub scalar: bool,
    /// The array was in Fortran order: the chunk codes its transpose, and the recorded
    /// shape is the array's shape reversed (the component axis still last).
    pub fortran: bool,
}

impl ElementType {
    /// The type of an array of `kind` numbers, little-endian, of rank 1 or more.
    pub fn of(kind: TypeKind) -> ElementType {
        ElementType {
            kind,
            ..ElementType::default()
        }
    }

    /// The header byte.
    pub fn to_byte(self) -> u8 {
        self.kind.id()
            | if self.fortran { FORTRAN } else { 0 }
            | if self.scalar { SCALAR } else { 0 }
            | if self.big_endian { BIG_ENDIAN } else { 0 }
    }

    /// The type a header byte records; `None` for a kind or bit the format does not define.
    pub fn from_byte(byte: u8) -> Option<ElementType> {
        if byte & !(KIND_MASK | FORTRAN | SCALAR | BIG_ENDIAN) != 0 {
            return None;
        }
        let kind = *TypeKind::ALL.get(usize::from(byte & KIND_MASK))?;
        Some(ElementType {
            kind,
            big_endian: byte & BIG_ENDIAN != 0,
            scalar: byte & SCALAR != 0,
            fortran: byte & FORTRAN != 0,
        })
    }

    /// Why the type cannot describe a chunk of `word_size`-byte words of `components`
    /// words per element, if it cannot.
    pub fn mismatch(self, word_size: usize, components: usize) -> Option<String> {
        let fits = match self.kind {
            TypeKind::Unknown => true,
            TypeKind::Bool => word_size == 1 && components == 1,
            TypeKind::Unsigned | TypeKind::Signed => components == 1,
            TypeKind::Float => matches!(word_size, 2 | 4 | 8) && components == 1,
            TypeKind::Complex => matches!(word_size, 4 | 8) && components == 2,
        };
        (!fits).then(|| {
            format!(
                "element type {:?} does not fit {components} word(s) of {word_size} bytes per element",
                self.kind
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_defined_byte_round_trips_and_others_are_refused() {
        let mut defined = 0;
        for byte in 0..=u8::MAX {
            match ElementType::from_byte(byte) {
                Some(t) => {
                    assert_eq!(t.to_byte(), byte);
                    defined += 1;
                }
                None => assert!(byte & 0x20 != 0 || byte & 0x0f > 5, "{byte:#04x}"),
            }
        }
        assert_eq!(defined, 6 * 8);
    }

    #[test]
    fn kinds_fit_their_words() {
        let complex = ElementType::of(TypeKind::Complex);
        assert_eq!(complex.mismatch(4, 2), None);
        assert_eq!(
            complex.mismatch(4, 1).as_deref(),
            Some("element type Complex does not fit 1 word(s) of 4 bytes per element")
        );
        assert!(ElementType::of(TypeKind::Bool).mismatch(2, 1).is_some());
        assert_eq!(ElementType::default().mismatch(8, 3), None);
    }
}
