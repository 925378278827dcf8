import { describe, expect, it } from "vitest";
import { careOf } from "../functions/participants-bulk/care-columns.ts";
import { MAX_IMPORT_LINES, normaliseHeader, parseImport, targetOf } from "../functions/participants-bulk/csv-import.ts";
import {
  booleanOf,
  consentOf,
  genderOf,
  isoDate,
  parseDateFormat,
  parseMapping,
} from "../functions/participants-bulk/import-options.ts";
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
  it("numbers lines as a spreadsheet numbers rows: header 1, empty lines counted, a multi-line cell one row", async () => {
    const parsed = await parseImport(
      'user_id,first_name,surname\r\na,Ada,Lovelace\r\n\r\nb,"Grace\r\nBrewster",Hopper\r\nc,Alan,Turing\r\nd,"x\n\ny",z\n\ne,Ed,Ng\n',
      INSTANCE,
    );
    expect(parsed.candidates.map((c) => c.at)).toEqual([2, 4, 5, 6, 8]);
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
    expect(parsed.candidates[0]).toMatchObject({
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

describe("import options", () => {
  it("reads dates in the format given, with or without leading zeros, with -, / or . as separators", () => {
    const dmy = parseDateFormat("DD/MM/YYYY");
    const mdy = parseDateFormat("MM/DD/YYYY");
    const dotted = parseDateFormat("D.M.YYYY");
    const iso = parseDateFormat("YYYY-MM-DD");
    if (!dmy || !mdy || !dotted || !iso) throw new Error("formats not read");
    expect(isoDate("05/07/2012", dmy)).toBe("2012-07-05");
    expect(isoDate("5/7/2012", dmy)).toBe("2012-07-05");
    expect(isoDate("5/7/2012", mdy)).toBe("2012-05-07");
    expect(isoDate("31.12.2011", dotted)).toBe("2011-12-31");
    expect(isoDate("2012-7-5", iso)).toBe("2012-07-05");
    // Not the format: another separator, a two-digit year, the other order's year first.
    for (const cell of ["05-07-2012", "05/07/12", "2012/07/05", "05/07/2012 00:00", ""])
      expect(isoDate(cell, dmy)).toBeUndefined();
    for (const bad of ["DD/MM/YY", "DD/DD/YYYY", "DD/MM-YYYY", "YYYY MM DD", "dd/mm/yyyy hh"])
      expect(parseDateFormat(bad)).toBeUndefined();
    expect(parseDateFormat("dd/mm/yyyy")?.order).toEqual(["D", "M", "Y"]);
  });

  it("understands the spellings spreadsheets use for genders, yes/no and consents", () => {
    for (const m of ["M", "m", "male", "MALE", " Male ", "boy"]) expect(genderOf(m.trim())).toBe("Male");
    for (const f of ["F", "female", "Female", "girl"]) expect(genderOf(f)).toBe("Female");
    for (const o of ["Non-binary", "non binary", "NB", "nonbinary", "Other", "X", "Genderqueer"])
      expect(genderOf(o)).toBe("Other");
    expect(genderOf("robot")).toBe("robot");
    for (const y of ["Y", "yes", "TRUE", "1"]) expect(booleanOf(y)).toBe(true);
    for (const n of ["N", "no", "False", "0"]) expect(booleanOf(n)).toBe(false);
    expect(booleanOf("maybe")).toBeUndefined();
    expect(["Y", "granted", "No", "refused", "unknown", "perhaps"].map(consentOf)).toEqual([
      "granted",
      "granted",
      "refused",
      "refused",
      "unknown",
      "perhaps",
    ]);
  });

  it("takes a mapping of columns and values, and names what is wrong with one", async () => {
    const mapping = parseMapping(
      JSON.stringify({ columns: { "Reg No": "user_id", Notes: null }, values: { gender: { Lad: "Male" }, room: { "8a": "8" } } }),
      "mapping",
    );
    const parsed = await parseImport(
      "Reg No,First name,Surname,Sex,Room,Notes,Group\nr1,Ada,Lovelace,lad,8A,hello,x\n",
      INSTANCE,
      {
        mapping,
      },
    );
    expect(parsed.candidates[0]).toMatchObject({
      input: { user_id: "r1", gender: "Male" },
      names: { room: "8" },
    });
    // A column the mapping leaves out is not listed as unknown; an unknown one close to a field's name gets a suggestion.
    expect(parsed.ignored).toEqual(["Group"]);
    expect(parsed.suggestions).toEqual([{ column: "Group", did_you_mean: ["supergroup", "subgroup"] }]);
    expect(() => parseMapping("{", "mapping")).toThrow(/not JSON/);
    expect(() => parseMapping('{"colums": {}}', "mapping")).toThrow(/not a valid mapping/);
    expect(await refusal2("user_id,first_name,surname\nu,A,B\n", { columns: { "No such column": "user_id" } })).toMatch(
      /header does not have/,
    );
    expect(await refusal2("user_id,first_name,surname,x\nu,A,B,c\n", { columns: { x: "favourite_colour" } })).toMatch(
      /not a field an import takes/,
    );
  });

  it("suggests fields for columns close to their names", async () => {
    const parsed = await parseImport("user_id,first_name,surname,Group,Surnme,Allergy notes,Colour\nu,A,B,,,,\n", INSTANCE);
    expect(parsed.suggestions).toEqual([
      { column: "Group", did_you_mean: ["supergroup", "subgroup"] },
      { column: "Surnme", did_you_mean: ["surname"] },
    ]);
  });

  it("validates care cells as the care routes do, naming the column and never the value", () => {
    const good = careOf({
      contact_1_name: "Jo Smith",
      contact_1_phone: "+44 20 7946 0958",
      contact_1_emergency: "Y",
      allergies: "peanuts:anaphylactic; pollen:Mild",
      consent_photo: "yes",
    });
    expect(good).toEqual({
      issues: [],
      value: {
        contacts: [{ name: "Jo Smith", phone: "+442079460958", emergency: true }],
        care: {
          allergies: [
            { name: "peanuts", severity: "anaphylactic" },
            { name: "pollen", severity: "mild" },
          ],
        },
        consents: { photo: "granted" },
      },
    });
    const bad = careOf({
      contact_1_name: "Jo Smith",
      contact_1_emergency: "yes",
      contact_2_phone: "07700 900123",
      contact_2_email: "secret-address",
      allergies: "peanuts-very-bad",
      consent_photo: "perhaps",
    });
    expect(bad.value).toBeUndefined();
    expect(bad.issues.map((i) => i.field)).toEqual([
      "contact_1_phone",
      "contact_2_name",
      "contact_2_phone",
      "contact_2_email",
      "allergies",
      "consent_photo",
    ]);
    const text = JSON.stringify(bad.issues);
    for (const secret of ["Jo Smith", "07700", "secret-address", "peanuts", "perhaps"]) expect(text).not.toContain(secret);
  });
});

async function refusal2(text: string, mapping: object): Promise<string> {
  try {
    await parseImport(text, INSTANCE, { mapping: parseMapping(JSON.stringify(mapping), "mapping") });
  } catch (error) {
    return (error as Error).message;
  }
  return "accepted";
}
