import { describe, expect, it } from "vitest";
import { MAX_IMPORT_LINES, normaliseHeader, parseImport, targetOf } from "../functions/participants-bulk/csv-import.ts";
import { orderedIds } from "../functions/participants-bulk/rows.ts";

const INSTANCE = "11111111-1111-4111-8111-111111111111";

/** What a thrown ApiError says, for the whole-file refusals. */
async function refusal(text: string | Uint8Array): Promise<string> {
  try {
    await parseImport(text, INSTANCE);
  } catch (error) {
    return (error as Error).message;
  }
  return "accepted";
}

describe("CSV header mapping", () => {
  it("matches field names whatever their case, spacing and punctuation", () => {
    expect(normaliseHeader("  Date of Birth ")).toBe("date_of_birth");
    expect(normaliseHeader("first-name")).toBe("first_name");
    expect(normaliseHeader("Room #")).toBe("room");
    for (const header of ["First Name", "FIRST_NAME", "forename", "Given name"]) expect(targetOf(header)).toBe("first_name");
    for (const header of ["Surname", "Last Name", "family_name", "LASTNAME"]) expect(targetOf(header)).toBe("surname");
    for (const header of ["DOB", "Birth date", "birthday"]) expect(targetOf(header)).toBe("date_of_birth");
    expect(targetOf("Sex")).toBe("gender");
    expect(targetOf("Supergroup name")).toBe("supergroup");
    expect(targetOf("super_group_id")).toBe("super_group_id");
    expect(targetOf("created_at")).toBe("skip");
    expect(targetOf("Favourite colour")).toBeUndefined();
  });
});

describe("parseImport", () => {
  it("numbers lines as the file does: header 1, empty lines counted, a multi-line cell at its first line", async () => {
    const parsed = await parseImport(
      'user_id,first_name,surname\r\na,Ada,Lovelace\r\n\r\nb,"Grace\r\nBrewster",Hopper\r\nc,Alan,Turing\r\n',
      INSTANCE,
    );
    expect(parsed.candidates.map((c) => c.at)).toEqual([2, 4, 6]);
    expect(parsed.candidates[1]?.input).toEqual({
      instance_id: INSTANCE,
      user_id: "b",
      first_name: "Grace\nBrewster",
      surname: "Hopper",
    });
  });

  it("reads semicolon and tab separated files, trims cells and leaves empty cells unset", async () => {
    for (const separator of [";", "\t"]) {
      const parsed = await parseImport(
        ["user_id", "first_name", "surname", "rank"].join(separator) + "\n u1 ;Ada;Lovelace;".replaceAll(";", separator),
        INSTANCE,
      );
      expect(parsed.candidates[0]?.input).toEqual({
        instance_id: INSTANCE,
        user_id: "u1",
        first_name: "Ada",
        surname: "Lovelace",
      });
    }
  });

  it("drops the export's neutralising quote, lower-cases status and keeps names apart from fields", async () => {
    const parsed = await parseImport("user_id,first_name,surname,status,block,room\nu1,'=cmd,'+1,Active,North,101\n", INSTANCE);
    expect(parsed.candidates[0]).toEqual({
      at: 2,
      input: { instance_id: INSTANCE, user_id: "u1", first_name: "=cmd", surname: "+1", status: "active" },
      names: { block: "North", room: "101" },
    });
  });

  it("skips lines whose cells are all empty and rejects lines with extra cells", async () => {
    const parsed = await parseImport("user_id,first_name,surname\n,,\nu1,Ada,Lovelace,,\nu2,Alan,Turing,x\n", INSTANCE);
    expect(parsed.candidates.map((c) => c.at)).toEqual([3]);
    expect(parsed.issues).toEqual([{ at: 4, field: "line", issue: "has 4 cells, the header has 3" }]);
  });

  it("refuses a file without the required columns, with a repeated column, without lines or with too many", async () => {
    expect(await refusal("first_name,surname\nAda,Lovelace\n")).toMatch(/no column for user_id/);
    expect(await refusal("user_id,First Name,forename,surname\n")).toMatch(/'First Name' and 'forename' both mean first_name/);
    expect(await refusal("user_id,first_name,surname\n\n\n")).toMatch(/no participant lines/);
    expect(await refusal(`user_id,first_name,surname\n${"u,A,B\n".repeat(MAX_IMPORT_LINES + 1)}`)).toMatch(/at most 20000/);
  });

  it("decodes UTF-8 with or without a byte-order mark and refuses other encodings", async () => {
    const text = "user_id,first_name,surname\nu1,Zoë,O'Brien 🏕️\n";
    const withBom = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode(text)]);
    for (const bytes of [withBom, new TextEncoder().encode(text)]) {
      const parsed = await parseImport(bytes, INSTANCE);
      expect(parsed.columns[0]).toEqual({ column: "user_id", field: "user_id" });
      expect(parsed.candidates[0]?.input).toMatchObject({ first_name: "Zoë", surname: "O'Brien 🏕️" });
    }
    const latin1 = (tail: number[]) =>
      new Uint8Array([...new TextEncoder().encode("user_id,first_name,surname\nu1,Zo"), ...tail]);
    expect(await refusal(latin1([0xeb, 0x2c, 0x41, 0x0a]))).toMatch(/not UTF-8/);
    // A multi-byte character cut off by the end of the file.
    expect(await refusal(latin1([0xeb]))).toMatch(/not UTF-8/);
  });
});

describe("orderedIds", () => {
  it("gives ids that sort in row order, so a batch lists in the order it was sent", () => {
    const ids = orderedIds(500);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(500);
  });
});
